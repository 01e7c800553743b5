#!/usr/bin/python3
"""Optuna's Hyperband (HyperbandPruner with TPESampler) on the mlp of
fidelity_torch_bench.sh, trained with PyTorch (Debian's python3-torch): the
same space (lr log [1e-4, 0.5], width 32..512 step 32, depth 1..3, dropout
[0, 0.5]; SGD with momentum 0.9, batch 128), the same first 12,000 Fashion-MNIST
training images split 10,800 / 1,200 (its own shuffle), one trial at a time,
each reporting its validation accuracy after every epoch up to 9 and stopped
when the pruner says so. The budget it spent is the epochs it ran; the
incumbent is the best completed (9-epoch) trial by validation accuracy, its
quality that model's accuracy on the 10,000 test images. Prints the bench's
rows ("traj", "end") with method optuna-hb.

  fidelity_torch_optuna.py [--seeds 3] [--total 270] [--max 9] [--eta 3] [--threads 1] [--random]

--random: RandomSampler without a pruner (every trial trains 9 epochs; method optuna-random),
the reference for hpo's random search: what is left between the two is the training and the
data split, not the search.
"""
import argparse
import gzip
import sys

import numpy as np
import optuna
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from fidelity_optuna import optimize_until_spent  # noqa: E402

optuna.logging.set_verbosity(optuna.logging.WARNING)
DATA = "/usr/share/datasets/fashion-mnist/"


def idx(images, labels, n=None):
    with gzip.open(DATA + images) as f:
        x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 784)
    with gzip.open(DATA + labels) as f:
        y = np.frombuffer(f.read(), np.uint8, offset=8)
    if n:
        x, y = x[:n], y[:n]
    return torch.from_numpy(x.astype(np.float32) / 255.0), torch.from_numpy(y.astype(np.int64))


def data(seed):
    x, y = idx("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", 12000)
    xt, yt = idx("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")
    order = torch.randperm(12000, generator=torch.Generator().manual_seed(seed))
    val, tr = order[:1200], order[1200:]
    mean, std = x[tr].mean(), x[tr].std()  # one mean and std, of the training rows
    norm = lambda v: (v - mean) / std  # noqa: E731
    return norm(x[tr]), y[tr], norm(x[val]), y[val], norm(xt), yt


def mlp(width, depth, dropout):
    layers, inputs = [], 784
    for _ in range(depth):
        layers += [nn.Linear(inputs, width), nn.ReLU()]
        if dropout > 0:
            layers.append(nn.Dropout(dropout))
        inputs = width
    layers.append(nn.Linear(inputs, 10))
    return nn.Sequential(*layers)


def accuracy(model, x, y):
    model.eval()
    with torch.no_grad():
        out = model(x)
    model.train()
    if not torch.isfinite(out).all():
        return 0.0
    return float((out.argmax(1) == y).float().mean())


def train_epoch(model, opt, x, y, batch=128):
    """One pass over (x, y) in a fresh random order, `batch` rows per SGD step."""
    perm = torch.randperm(x.shape[0])
    for s in range(0, x.shape[0], batch):
        i = perm[s:s + batch]
        opt.zero_grad()
        loss = F.cross_entropy(model(x[i]), y[i])
        if not torch.isfinite(loss):
            return  # diverged: the rest of the epoch changes nothing
        loss.backward()
        opt.step()


def run(seed, total, max_epochs, eta, random):
    xtr, ytr, xval, yval, xte, yte = data(seed)
    torch.manual_seed(seed)
    state = {"spent": 0}
    test_of = {}
    method = "optuna-random" if random else "optuna-hb"
    study = optuna.create_study(
        study_name="fidelity-torch-bench-%d" % seed,  # HyperbandPruner's brackets: see fidelity_optuna.py
        direction="maximize",
        sampler=(optuna.samplers.RandomSampler(seed=seed) if random
                 else optuna.samplers.TPESampler(seed=seed)),
        pruner=(optuna.pruners.NopPruner() if random else
                optuna.pruners.HyperbandPruner(min_resource=1, max_resource=max_epochs,
                                               reduction_factor=eta)))

    def objective(trial):
        lr = trial.suggest_float("lr", 1e-4, 0.5, log=True)
        width = trial.suggest_int("width", 32, 512, step=32)
        depth = trial.suggest_int("depth", 1, 3)
        dropout = trial.suggest_float("dropout", 0.0, 0.5)
        model = mlp(width, depth, dropout)
        opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
        val = 0.0
        for epoch in range(1, max_epochs + 1):
            train_epoch(model, opt, xtr, ytr)
            state["spent"] += 1
            val = accuracy(model, xval, yval)
            trial.report(val, epoch)
            if trial.should_prune():
                raise optuna.TrialPruned()
        test_of[trial.number] = accuracy(model, xte, yte)
        return val

    optimize_until_spent(study, objective, state, total, lambda best: test_of[best.number], method,
                         seed)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--total", type=int, default=270)
    ap.add_argument("--max", type=int, default=9)
    ap.add_argument("--eta", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--random", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    for seed in range(1, a.seeds + 1):
        run(seed, a.total, a.max, a.eta, a.random)


if __name__ == "__main__":
    main()
