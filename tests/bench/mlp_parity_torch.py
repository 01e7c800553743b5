#!/usr/bin/python3
"""The PyTorch side of mlp_parity_bench.sh: one fixed mlp configuration trained
on Fashion-MNIST with the data, model and training loop of
fidelity_torch_optuna.py, once per seed (split, initialisation, shuffling and
dropout all drawn from it). Prints "parity <seed> <validation accuracy> <test
accuracy>" per seed.

  mlp_parity_torch.py [--seeds 5] [--lr 0.05] [--width 256] [--depth 2] [--dropout 0.2]
                      [--epochs 9] [--threads 1]
"""
import argparse
import sys

import torch

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from fidelity_torch_optuna import accuracy, data, mlp, train_epoch  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--depth", type=int, default=2)
    ap.add_argument("--dropout", type=float, default=0.2)
    ap.add_argument("--epochs", type=int, default=9)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    for seed in range(1, a.seeds + 1):
        xtr, ytr, xval, yval, xte, yte = data(seed)
        torch.manual_seed(seed)
        model = mlp(a.width, a.depth, a.dropout)
        opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=0.9)
        for _ in range(a.epochs):
            train_epoch(model, opt, xtr, ytr)
        print("parity %d %.6f %.6f" % (seed, accuracy(model, xval, yval), accuracy(model, xte, yte)),
              flush=True)


if __name__ == "__main__":
    main()
