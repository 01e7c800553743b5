#!/usr/bin/env python3
"""A real PyTorch program with the hpo library: an MLP on Fashion-MNIST
(torchvision, reading Debian's dataset-fashion-mnist files), with pruning,
checkpoints and drains.

  fashion_mnist.py [--train-samples N] [--epochs E]   (also standalone)

Each epoch it reports val_loss and val_accuracy; a pruned trial stops at once;
a drained or preempted one saves model, optimiser and epoch and goes on from
there on another worker; every epoch's checkpoint lets a retried attempt (a
crash, a lost host) resume too. Parameters: lr, hidden, dropout, batch_size.
"""
import argparse
import gzip
import os
import shutil
import tempfile
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

import hpo
from hpo.integrations.torch import Checkpointer, device, seed_everything

DEBIAN_FILES = Path("/usr/share/datasets/fashion-mnist")


def torchvision_root():
    """A folder laid out as torchvision's FashionMNIST expects (raw/ with the
    unpacked IDX files), made once from Debian's .gz files."""
    root = Path(os.environ.get("FASHION_MNIST_ROOT") or Path(tempfile.gettempdir(), "hpo-fashion-mnist"))
    raw = root / "FashionMNIST" / "raw"
    if not (raw / "t10k-labels-idx1-ubyte").exists():
        staging = Path(tempfile.mkdtemp(dir=root.parent if root.parent.exists() else None))
        (staging / "raw").mkdir()
        for gz in DEBIAN_FILES.glob("*.gz"):
            with gzip.open(gz) as src, open(staging / "raw" / gz.stem, "wb") as dst:
                shutil.copyfileobj(src, dst)
        raw.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.rename(staging / "raw", raw)  # another trial may have been first
        except OSError:
            pass
        shutil.rmtree(staging, ignore_errors=True)
    return root


def load(train_samples):
    from torchvision import datasets

    root = torchvision_root()
    train = datasets.FashionMNIST(root, train=True, download=False)
    test = datasets.FashionMNIST(root, train=False, download=False)
    x = train.data[:train_samples].float().div(255).flatten(1)
    y = train.targets[:train_samples]
    n_val = len(x) // 6
    return (x[n_val:], y[n_val:]), (x[:n_val], y[:n_val]), (test.data.float().div(255).flatten(1), test.targets)


def main():
    args = argparse.ArgumentParser()
    args.add_argument("--train-samples", type=int, default=12000)
    args.add_argument("--epochs", type=int, default=8)
    opts, _ = args.parse_known_args()

    trial = hpo.trial(defaults={"lr": 0.05, "hidden": 128, "dropout": 0.1, "batch_size": 64})
    p = trial.params
    seed_everything(trial)
    dev = device(trial)
    (x_tr, y_tr), (x_va, y_va), _ = load(opts.train_samples)
    model = nn.Sequential(nn.Linear(784, p.hidden), nn.ReLU(), nn.Dropout(p.dropout),
                          nn.Linear(p.hidden, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=p.lr, momentum=0.9)
    ckpt = Checkpointer(trial, model=model, optimizer=opt)  # a resumed attempt's state
    if ckpt.start_epoch:
        print(f"resuming at epoch {ckpt.start_epoch}")
    g = torch.Generator().manual_seed(trial.seed)
    val_loss = acc = None
    for epoch in range(ckpt.start_epoch, opts.epochs):
        model.train()
        for idx in torch.randperm(len(x_tr), generator=g).split(p.batch_size):
            opt.zero_grad()
            F.cross_entropy(model(x_tr[idx].to(dev)), y_tr[idx].to(dev)).backward()
            opt.step()
        model.eval()
        with torch.no_grad():
            out = model(x_va.to(dev))
            val_loss = F.cross_entropy(out, y_va.to(dev)).item()
            acc = (out.argmax(1).cpu() == y_va).float().mean().item()
        trial.report(epoch, val_loss=val_loss, val_accuracy=acc)
        if trial.should_stop():  # pruned, cancelled, timed out: stop; drained: save first
            if trial.checkpoint_on_stop:
                ckpt.save(epoch + 1)
            return
        ckpt.save(epoch + 1)  # a crash or a lost host resumes from the last epoch
    trial.final(val_loss=val_loss, val_accuracy=acc)


if __name__ == "__main__":
    main()
