#!/usr/bin/env python3
"""A hostile trial program: it tries what a trial must not be able to do and
writes what it found to DROP/<trial number>.json (DROP: a 1777 folder the test
made). The test judges the findings; this program only reports them.

  hostile_trial.py probe   -- secrets, descriptors, Redis, the other trial
  hostile_trial.py memory  -- eight processes that together exceed memory_gb
"""
import json
import os
import re
import socket
import subprocess
import sys
import time


def attempt(fn):
    """'ok: <value>' or the exception's class name."""
    try:
        return "ok: " + str(fn())[:2000]
    except Exception as e:  # noqa: BLE001 - every refusal is a finding
        return type(e).__name__


def read(path):
    with open(path, "rb") as f:
        return f.read().decode("utf-8", "replace")


def open_fds():
    fds = []
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            os.fstat(fd)  # the listing's own descriptor is closed by now
            fds.append(fd)
        except OSError:
            pass
    return sorted(fds)


def probe(drop, number):
    home = os.environ.get("GUESS_HPO_HOME", "")
    port = int(os.environ.get("GUESS_REDIS_PORT", "6379"))
    found = {"uid": os.getuid(), "gid": os.getgid(), "pid": os.getpid(),
             "env": dict(os.environ)}
    # Secrets through /proc: every process's environment and command line.
    leaks = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        for what in ("environ", "cmdline"):
            text = attempt(lambda: read(f"/proc/{pid}/{what}"))
            # A credential: a URL with one, a password option, an ACL user line.
            if text.startswith("ok: ") and (
                    re.search(r"rediss?(-sentinel)?://[^\s\x00/]*@", text) or any(
                        k in text for k in ("requirepass", "masterauth", "HPO_TOKEN=",
                                            "user hpo-"))):
                leaks.append(f"{pid}/{what}: {text}")
    found["proc_leaks"] = leaks
    found["parent_environ"] = attempt(lambda: read(f"/proc/{os.getppid()}/environ"))
    found["parent_mem"] = attempt(lambda: read(f"/proc/{os.getppid()}/maps"))
    # The worker's and scheduler's files.
    found["scheduler_json"] = attempt(lambda: read(os.path.join(home, "scheduler.json")))
    found["hpo_home_list"] = attempt(lambda: os.listdir(home))
    found["redis_conf"] = attempt(lambda: read(os.path.join(home, "data", "redis.conf")))
    # Inherited descriptors: anything beyond stdin, stdout, stderr.
    found["fds"] = open_fds()
    for fd in found["fds"]:
        if fd > 2:
            found[f"fd{fd}"] = attempt(lambda: os.write(fd, b"SET hpo:pwned 1\r\n"))
    # The worker's control folder (the stop's reason, checkpoint receipts): a
    # link planted there, or a file written, would have the worker write
    # through it.
    control = os.environ.get("HPO_CONTROL_DIR", "")
    found["control_plant"] = attempt(
        lambda: os.symlink("/etc/passwd", os.path.join(control, "stop_reason")))
    found["control_write"] = attempt(lambda: open(os.path.join(control, "checkpoint"), "w").close())
    # Redis with no credential.
    def redis_set():
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(b"SET hpo:pwned 1\r\n")
            return s.recv(200).decode()
    found["redis_set"] = attempt(redis_set)
    # Shared places another tenant would read: /tmp, /var/tmp, /dev/shm.
    for place in ("/tmp", "/var/tmp", "/dev/shm"):
        attempt(lambda: open(os.path.join(place, "hpo-plant-%d" % number), "w").close())
    # The processes it can see, and those of them that are not its own (not
    # started for this trial number; pid 1 of a namespace of its own is its init).
    pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
    found["pids"] = pids
    mine_env = "HPO_TRIAL_NUMBER=%d" % number
    found["foreign"] = [p for p in pids if mine_env not in attempt(
        lambda: read("/proc/%d/environ" % p).replace("\x00", " "))]
    # The GPUs' device files it sees (the stand-ins of a test, or a host's own).
    found["nvidia"] = sorted(n for n in os.listdir("/dev") if n.startswith("nvidia"))
    # The other trial: its attempt directory and its process.
    workdir = os.environ["HPO_WORK_DIR"]
    with open(os.path.join(workdir, "secret"), "w") as f:
        f.write("the secret of trial %d" % number)
    child = subprocess.Popen(["sleep", "600"], start_new_session=True)
    found["orphan"] = child.pid
    mine = os.path.join(drop, "%d.where" % number)
    with open(mine + ".tmp", "w") as f:
        json.dump({"workdir": workdir, "pid": os.getpid()}, f)
    os.chmod(mine + ".tmp", 0o644)
    os.rename(mine + ".tmp", mine)
    other = os.path.join(drop, "%d.where" % (1 - number))
    deadline = time.monotonic() + 120
    while not os.path.exists(other) and time.monotonic() < deadline:
        time.sleep(0.05)
    if os.path.exists(other):
        with open(other) as f:
            peer = json.load(f)
        found["other_list"] = attempt(lambda: os.listdir(peer["workdir"]))
        found["other_secret"] = attempt(lambda: read(os.path.join(peer["workdir"], "secret")))
        if peer["pid"] in pids and peer["pid"] not in found["foreign"]:
            # Its number names a process of this trial's own (a PID namespace each).
            found["other_kill"] = found["other_environ"] = "its number is one of this trial's"
        else:
            found["other_kill"] = attempt(lambda: os.kill(peer["pid"], 0))
            found["other_environ"] = attempt(lambda: read("/proc/%d/environ" % peer["pid"]))
        found["other_plants"] = [
            path for path in ("/tmp/hpo-plant-%d" % (1 - number), "/var/tmp/hpo-plant-%d" % (1 - number),
                              "/dev/shm/hpo-plant-%d" % (1 - number)) if os.path.exists(path)]
    else:
        found["other_list"] = "the other trial never came"
    # Both have looked before either ends (its directory goes with it).
    done = os.path.join(drop, "%d.done" % number)
    open(done, "w").close()
    other_done = os.path.join(drop, "%d.done" % (1 - number))
    deadline = time.monotonic() + 120
    while not os.path.exists(other_done) and time.monotonic() < deadline:
        time.sleep(0.05)
    return found


def hold_memory(mib, processes):
    """Each of `processes` children touches `mib` MiB and holds it until all
    have (or were killed): a pipe says "touched", closing another says "let go".
    Returns how many children did not exit cleanly."""
    touched_r, touched_w = os.pipe()
    go_r, go_w = os.pipe()
    kids = []
    for _ in range(processes):
        pid = os.fork()
        if pid == 0:
            os.close(touched_r)
            os.close(go_w)
            block = bytearray(mib << 20)
            for i in range(0, len(block), 4096):
                block[i] = 1
            os.write(touched_w, b"x")
            os.close(touched_w)
            os.read(go_r, 1)  # EOF once the parent lets go
            os._exit(0)
        kids.append(pid)
    os.close(touched_w)
    while os.read(touched_r, 64):  # EOF: every child touched its memory or died
        pass
    os.close(go_w)
    return sum(os.waitpid(pid, 0)[1] != 0 for pid in kids)


def memory():
    return {"killed": hold_memory(96, 8)}


def main():
    mode, drop = sys.argv[1], sys.argv[2]
    number = int(os.environ["HPO_TRIAL_NUMBER"])
    found = probe(drop, number) if mode == "probe" else memory()
    out = os.path.join(drop, "%d.json" % number)
    with open(out + ".tmp", "w") as f:
        json.dump(found, f)
    os.rename(out + ".tmp", out)
    if mode == "memory" and found["killed"]:
        sys.exit("%d of 8 processes were killed" % found["killed"])
    print('hpo-metric {"final": true, "score": 1}', flush=True)


if __name__ == "__main__":
    main()
