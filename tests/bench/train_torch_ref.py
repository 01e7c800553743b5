#!/usr/bin/python3
"""Reference for tests/bench/train_bench: the same mlp and cnn trained with PyTorch
for Python (Debian python3-torch, the same LibTorch underneath), same batches,
same threads. Run with OPENBLAS_NUM_THREADS=1 (train_bench.sh does).

Prints one line per measurement: RESULT <name> <samples_per_s>
"""
import gzip
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

DATA = "/usr/share/datasets/fashion-mnist/"


def load(n):
    with gzip.open(DATA + "train-images-idx3-ubyte.gz") as f:
        x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 1, 28, 28)[:n]
    with gzip.open(DATA + "train-labels-idx1-ubyte.gz") as f:
        y = np.frombuffer(f.read(), np.uint8, offset=8)[:n]
    x = torch.from_numpy(x.astype(np.float32) / 255.0)
    x = (x - x.mean()) / x.std()
    return x, torch.from_numpy(y.astype(np.int64))


def mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128),
                         nn.ReLU(), nn.Linear(128, 10))


def cnn():
    return nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.Conv2d(32, 64, 3), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Flatten(), nn.Linear(9216, 128), nn.ReLU(),
                         nn.Linear(128, 10))


def train(model, x, y, batch, epochs):
    """The usual loop: shuffle, index a batch, forward, loss, backward, step."""
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    n = x.shape[0]
    seen = 0
    t0 = time.perf_counter()
    for _ in range(epochs):
        perm = torch.randperm(n)
        for s in range(0, n, batch):
            idx = perm[s:s + batch]
            opt.zero_grad()
            loss = F.cross_entropy(model(x[idx]), y[idx])
            loss.backward()
            if not torch.isfinite(loss):
                raise RuntimeError("nan")
            opt.step()
            seen += idx.shape[0]
    return seen / (time.perf_counter() - t0)


def main():
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    mlp_rows = int(sys.argv[2]) if len(sys.argv) > 2 else 60000
    cnn_rows = int(sys.argv[3]) if len(sys.argv) > 3 else 6400
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    x, y = load(max(mlp_rows, cnn_rows))
    train(mlp(), x[:1280], y[:1280], 128, 1)  # warm-up
    print(f"RESULT mlp_python {train(mlp(), x[:mlp_rows], y[:mlp_rows], 128, 1):.1f}", flush=True)
    train(cnn(), x[:256], y[:256], 128, 1)
    print(f"RESULT cnn_python {train(cnn(), x[:cnn_rows], y[:cnn_rows], 128, 1):.1f}", flush=True)


if __name__ == "__main__":
    main()
