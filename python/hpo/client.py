"""hpo.Client: the scheduler's public REST API from a notebook or a script.

It finds the scheduler and the token as the `hpo` command line does: the
arguments, else $HPO_SERVER / $HPO_TOKEN / $HPO_CA_FILE, else the local
scheduler's $HPO_HOME/scheduler.json (~/.hpo), else http://127.0.0.1:8080.
The local scheduler's token is sent only to the server that wrote it (the
"api" URL beside it), and no redirect is followed.
"""
import http.client
import json
import os
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

ENDED = ("finished", "cancelled", "failed")


class HpoError(Exception):
    """An error answer of the API: `status` (HTTP), `code` and `message` as the
    server said them, `fields` (the JSON paths it names)."""

    def __init__(self, status, code, message, fields=None):
        super().__init__(f"{message} (HTTP {status}, {code})")
        self.status, self.code, self.message, self.fields = status, code, message, fields or []


def _server_key(url):
    """What names one server in a URL: scheme, host (any case), port, base path."""
    u = urllib.parse.urlsplit(url)
    try:
        port = u.port or (443 if u.scheme == "https" else 80)
    except ValueError:
        return None
    return (u.scheme.lower(), (u.hostname or "").lower(), port, u.path.rstrip("/"))


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect is answered as it is, never followed: the token would go along."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


def _local_state():
    home = os.environ.get("HPO_HOME") or os.path.join(os.path.expanduser("~"), ".hpo")
    try:
        with open(os.path.join(home, "scheduler.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


class Client:
    """A client of one scheduler. Every method is one or a few API calls."""

    def __init__(self, server=None, token=None, ca_file=None, timeout=30.0):
        local = _local_state()
        ca_file = ca_file or os.environ.get("HPO_CA_FILE")
        if not server:
            server = os.environ.get("HPO_SERVER")
            if not server and local.get("api"):
                server = local["api"]
                ca_file = ca_file or local.get("ca_file")
        self.server = (server or "http://127.0.0.1:8080").rstrip("/")
        # The local scheduler's admin token goes to that scheduler alone.
        issued_here = bool(local.get("api")) and _server_key(local["api"]) == _server_key(
            self.server)
        self.token = (token or os.environ.get("HPO_TOKEN")
                      or (local.get("token") if issued_here else None) or None)
        self.timeout = timeout
        self._ssl = ssl.create_default_context(cafile=ca_file) if ca_file else None
        self._open = urllib.request.build_opener(
            _NoRedirect, urllib.request.HTTPSHandler(context=self._ssl)).open

    # ---- transport ------------------------------------------------------
    def _request(self, method, path, body=None, query=None, headers=None, raw=False):
        url = self.server + path
        if query:
            url += "?" + urllib.parse.urlencode({k: v for k, v in query.items() if v is not None})
        data = None
        h = {"Accept": "application/json"}
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        if body is not None:
            data = json.dumps(body).encode()
            h["Content-Type"] = "application/json"
        h.update(headers or {})
        req = urllib.request.Request(url, data=data, method=method, headers=h)
        try:
            with self._open(req, timeout=self.timeout) as resp:
                payload = resp.read()
        except urllib.error.HTTPError as e:
            text = e.read().decode(errors="replace")
            try:
                err = json.loads(text)["error"]
            except (ValueError, KeyError, TypeError):
                err = None
            if not isinstance(err, dict):
                raise HpoError(e.code, "http", text or str(e.reason)) from None
            raise HpoError(e.code, err.get("code", ""), err.get("message", text),
                           err.get("fields")) from None
        except urllib.error.URLError as e:
            raise HpoError(0, "unreachable", f"{self.server}: {e.reason}") from None
        except (OSError, http.client.HTTPException) as e:  # a timeout, a dropped connection
            raise HpoError(0, "unreachable", f"{self.server}: {e}") from None
        if raw:
            return payload
        return json.loads(payload) if payload else None

    # ---- sweeps ---------------------------------------------------------
    def submit(self, spec, project=None):
        """Submits a spec (a dict, a JSON string or a path to a .json file);
        returns the sweep's id. A retry after a lost answer creates no second
        sweep (the request carries an Idempotency-Key)."""
        if isinstance(spec, (str, Path)) and not str(spec).lstrip().startswith("{"):
            spec = json.loads(Path(spec).read_text())
        elif isinstance(spec, str):
            spec = json.loads(spec)
        key = {"Idempotency-Key": uuid.uuid4().hex}
        query = {"project": project} if project else None
        for attempt in range(3):
            try:
                return self._request("POST", "/api/sweeps", spec, query, key)["id"]
            except HpoError as e:
                if e.status not in (0, 502, 503) or attempt == 2:
                    raise
                time.sleep(0.5 * (attempt + 1))

    def sweep(self, sweep_id):
        """The sweep: state, stage, counts, best trial."""
        return self._request("GET", f"/api/sweeps/{sweep_id}")

    def sweeps(self, project=None, limit=100):
        return self._request("GET", "/api/sweeps", query={"project": project, "limit": limit})["sweeps"]

    def wait(self, sweep_id, timeout=None, poll=1.0, on_change=None):
        """Follows the sweep until it ends (finished, cancelled or failed);
        returns it. `on_change(sweep)` is called when its counts move;
        TimeoutError after `timeout` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        seen = None
        while True:
            s = self.sweep(sweep_id)
            now = (s.get("state"), s.get("stage"), json.dumps(s.get("counts"), sort_keys=True))
            if on_change and now != seen:
                on_change(s)
            seen = now
            if s.get("state") in ENDED:
                return s
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"sweep {sweep_id} is still {s.get('state')}")
            time.sleep(poll)

    def cancel(self, sweep_id):
        return self._request("POST", f"/api/sweeps/{sweep_id}/cancel")

    def trials(self, sweep_id, state=None, sort=None, kind=None, as_dataframe=False):
        """Every trial of the sweep as records (dicts), or a pandas DataFrame
        with one column per parameter (param.NAME) and metric (metric.NAME)
        when as_dataframe is true (pandas must be installed)."""
        out, offset = [], 0
        while True:
            page = self._request("GET", f"/api/sweeps/{sweep_id}/trials",
                                 query={"state": state, "sort": sort, "kind": kind,
                                        "offset": offset, "limit": 500})
            out.extend(page["trials"])
            offset += len(page["trials"])
            if not page["trials"] or offset >= page.get("total", offset):
                break
        if not as_dataframe:
            return out
        import pandas as pd  # only here: the client needs no pandas otherwise

        rows = []
        for t in out:
            row = {k: v for k, v in t.items() if not isinstance(v, (dict, list))}
            row.update({f"param.{k}": v for k, v in (t.get("params") or {}).items()})
            row.update({f"metric.{k}": v for k, v in (t.get("metrics") or {}).items()})
            rows.append(row)
        return pd.DataFrame(rows)

    def trial(self, trial_id):
        """One trial with its attempts and reports."""
        return self._request("GET", f"/api/trials/{trial_id}")

    def artifact(self, trial_id, name, path=None):
        """A trial's artifact (output.model.json, log.txt, checkpoint, ...):
        its bytes, or written to `path` (returned)."""
        data = self._request("GET", f"/api/trials/{trial_id}/artifacts/{name}", raw=True)
        if path is None:
            return data
        Path(path).write_bytes(data)
        return Path(path)

    def pareto(self, sweep_id):
        """The Pareto front of a multi-objective sweep (its best trials for one objective)."""
        return self._request("GET", f"/api/sweeps/{sweep_id}/pareto")

    def ensemble(self, sweep_id):
        """The ensemble record: every model with its weight, the best single
        model and the ensemble's metrics."""
        return self._request("GET", f"/api/sweeps/{sweep_id}/ensemble")

    def whoami(self):
        return self._request("GET", "/api/whoami")

    def workers(self):
        return self._request("GET", "/api/workers")["workers"]
