"""The local scheduler's admin token goes only to the server that wrote it.

$HPO_HOME/scheduler.json names the local scheduler ("api") and holds its
admin token. The real `hpo` binary and hpo.Client are pointed at another
server (a stand-in on loopback that records what it is sent, and answers
401 as a stranger would, or a redirect to a third one): neither sends the
token there, and the binary says why on the 401. Pointed at the local
scheduler itself (by default, or by its URL spelled another way), both do.
Run by CTest with the hpo binary's path: python3 token_scope_test.py HPO."""
import http.server
import json
import os
import subprocess
import sys
import tempfile
import threading
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))

import hpo  # noqa: E402

HPO = None  # set from argv
TOKEN = "local-admin-token-5f2b8a9c0d"


class Recorder(http.server.ThreadingHTTPServer):
    """Answers every request as `answer` says; keeps each Authorization header."""

    def __init__(self, answer):
        self.seen = []
        self.answer = answer

        recorder = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                recorder.seen.append(self.headers.get("Authorization"))
                status, headers, body = recorder.answer(self.path)
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server_address[1]}"


def whoami(_path):
    return 200, {"Content-Type": "application/json"}, json.dumps(
        {"user": "admin", "service_admin": True, "roles": {}}).encode()


def stranger(_path):
    body = json.dumps({"error": {"code": "unauthorized", "message": "no valid token"}}).encode()
    return 401, {"Content-Type": "application/json"}, body


class TokenScope(unittest.TestCase):
    def setUp(self):
        self.home = tempfile.TemporaryDirectory()
        self.local = Recorder(whoami)
        self.other = Recorder(stranger)
        state = {"api": self.local.url, "redis": "redis://127.0.0.1:1", "token": TOKEN, "pid": 1}
        path = Path(self.home.name) / "scheduler.json"
        path.write_text(json.dumps(state))
        path.chmod(0o600)
        self.env = {k: v for k, v in os.environ.items()
                    if k not in ("HPO_SERVER", "HPO_TOKEN", "HPO_CA_FILE")}
        self.env["HPO_HOME"] = self.home.name
        self.saved = dict(os.environ)
        os.environ.clear()
        os.environ.update(self.env)

    def tearDown(self):
        os.environ.clear()
        os.environ.update(self.saved)
        self.local.shutdown()
        self.other.shutdown()
        self.home.cleanup()

    def hpo(self, *args, env=None):
        return subprocess.run([HPO, *args], env=env or self.env, capture_output=True, text=True,
                              timeout=60)

    def test_the_cli_sends_the_local_token_to_the_local_scheduler_only(self):
        r = self.hpo("--server", self.other.url, "whoami")
        self.assertEqual(r.returncode, 6, r.stderr)
        self.assertEqual(self.other.seen, [None])
        self.assertIn("no token was sent", r.stderr)
        self.assertNotIn(TOKEN, r.stderr + r.stdout)
        # HPO_SERVER is the same as --server.
        r = self.hpo("whoami", env=dict(self.env, HPO_SERVER=self.other.url))
        self.assertEqual(self.other.seen, [None, None])
        # The local scheduler: by default, and by its URL spelled otherwise.
        r = self.hpo("whoami")
        self.assertEqual(r.returncode, 0, r.stderr)
        port = self.local.server_address[1]
        r = self.hpo("--server", f"http://127.0.0.1:{port}/", "whoami")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.local.seen, ["Bearer " + TOKEN] * 2)
        # A token given for the other server goes there, as asked.
        self.hpo("--server", self.other.url, "--token", "theirs", "whoami")
        self.assertEqual(self.other.seen[-1], "Bearer theirs")

    def test_the_python_client_sends_the_local_token_to_the_local_scheduler_only(self):
        with self.assertRaises(hpo.HpoError) as refused:
            hpo.Client(self.other.url).whoami()
        self.assertEqual(refused.exception.status, 401)
        self.assertEqual(self.other.seen, [None])
        os.environ["HPO_SERVER"] = self.other.url
        with self.assertRaises(hpo.HpoError):
            hpo.Client().whoami()
        self.assertEqual(self.other.seen, [None, None])
        del os.environ["HPO_SERVER"]
        self.assertEqual(hpo.Client().whoami()["user"], "admin")
        self.assertEqual(hpo.Client(self.local.url + "/").whoami()["user"], "admin")
        self.assertEqual(self.local.seen, ["Bearer " + TOKEN] * 2)

    def test_no_redirect_takes_the_token_elsewhere(self):
        # The local scheduler's address answers with a redirect to another server.
        self.local.answer = lambda path: (307, {"Location": self.other.url + path}, b"")
        with self.assertRaises(hpo.HpoError) as refused:
            hpo.Client().whoami()
        self.assertEqual(refused.exception.status, 307)
        self.assertEqual(self.other.seen, [])
        self.hpo("whoami")
        self.assertEqual(self.other.seen, [])
        self.assertEqual(self.local.seen, ["Bearer " + TOKEN] * 2)


if __name__ == "__main__":
    HPO = sys.argv.pop(1)
    unittest.main(verbosity=2)
