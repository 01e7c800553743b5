#!/usr/bin/python3
"""The reference of tests/bench/throughput_bench.sh: Optuna's own distributed
setup for many cheap trials. A redis-server of its own (AOF on, appendfsync
always, like hpo's embedded one), JournalRedisStorage, and P worker processes
that each run study.optimize on the same study until N trials are finished in
all. The objective does no work (hpo's `synthetic` `noop`), the sampler is
random (hpo's sweep uses random too), so what is timed is Optuna's
orchestration. Prints one line: trials/s.

    /usr/bin/python3 tests/bench/throughput_optuna.py TRIALS PROCESSES

Debian's python3-optuna and python3-redis (scripts/install-deps.sh --bench).
"""
import multiprocessing
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import warnings

import optuna

warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
from optuna.storages import JournalRedisStorage, JournalStorage


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def objective(trial):
    trial.suggest_float("x1", -5, 10)
    trial.suggest_float("x2", 0, 15)
    return 0.0


def work(url, name, count):
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = JournalStorage(JournalRedisStorage(url))
    study = optuna.load_study(study_name=name, storage=storage,
                              sampler=optuna.samplers.RandomSampler())
    study.optimize(objective, n_trials=count)


def main():
    trials, processes = int(sys.argv[1]), int(sys.argv[2])
    port = free_port()
    data = tempfile.mkdtemp(prefix="optuna-redis-")
    redis = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", data,
         "--appendonly", "yes", "--appendfsync", "always", "--save", ""],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        url = f"redis://127.0.0.1:{port}"
        # The server says when it serves: read its log up to that line; a
        # server that neither serves nor exits within 30 s is killed (EOF).
        watchdog = threading.Timer(30, redis.kill)
        watchdog.start()
        for line in redis.stdout:
            if "Ready to accept connections" in line:
                break
        else:
            raise RuntimeError("redis-server did not start")
        watchdog.cancel()
        redis.stdout.close()  # nothing more is read from it
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        storage = JournalStorage(JournalRedisStorage(url))
        optuna.create_study(study_name="bench", storage=storage)
        shares = [trials // processes + (1 if i < trials % processes else 0)
                  for i in range(processes)]
        start = time.perf_counter()
        procs = [multiprocessing.Process(target=work, args=(url, "bench", n)) for n in shares]
        for p in procs:
            p.start()
        for p in procs:
            p.join()
        elapsed = time.perf_counter() - start
        study = optuna.load_study(study_name="bench", storage=storage)
        done = sum(1 for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE)
        if done != trials:
            print(f"optuna finished {done} of {trials} trials", file=sys.stderr)
            sys.exit(1)
        print(f"{trials / elapsed:.1f}")
    finally:
        redis.terminate()
        redis.wait()
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
