#!/usr/bin/python3
"""Python reference for tests/bench/train_service_bench.sh: the mlp 784-256-128-10
(or the benchmark cnn) trained as a torch trial of that bench is — SGD lr 0.01
momentum 0.9, batch 128, E epochs over the first 54,000 Fashion-MNIST training
images standardised with one mean/std — with T threads. Prints
RESULT <model> <samples_per_s> for the training loop only (as the trial's
train_samples_per_s). Run with OPENBLAS_NUM_THREADS=1.

  train_service_ref.py MODEL THREADS EPOCHS
"""
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from train_torch_ref import cnn, load, mlp  # noqa: E402


def main():
    model_name, threads, epochs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    x, y = load(60000)
    x, y = x[:54000], y[:54000]
    model = mlp() if model_name == "mlp" else cnn()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    n, seen = x.shape[0], 0
    t0 = time.perf_counter()
    for _ in range(epochs):
        perm = torch.randperm(n)
        for s in range(0, n, 128):
            idx = perm[s:s + 128]
            opt.zero_grad()
            loss = F.cross_entropy(model(x[idx]), y[idx])
            loss.backward()
            opt.step()
            seen += idx.shape[0]
    print(f"RESULT {model_name} {seen / (time.perf_counter() - t0):.1f}", flush=True)


if __name__ == "__main__":
    main()
