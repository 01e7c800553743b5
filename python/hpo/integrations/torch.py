"""A plain PyTorch training loop with hpo: seeds, the device, checkpoints.

    from hpo.integrations.torch import Checkpointer, seed_everything, device

    trial = hpo.trial(defaults={"lr": 0.01, "epochs": 10})
    seed_everything(trial)
    model = Net().to(device(trial)); opt = torch.optim.SGD(model.parameters(), trial.params.lr)
    ckpt = Checkpointer(trial, model=model, optimizer=opt)   # restores the last checkpoint
    for epoch in range(ckpt.start_epoch, trial.params.epochs):
        train(model, opt); loss = evaluate(model)
        trial.report(epoch, val_loss=loss)
        if trial.should_stop():
            if trial.checkpoint_on_stop:                      # a drain or a preemption
                ckpt.save(epoch + 1)
            break
        ckpt.save(epoch + 1)
    trial.final(val_loss=loss)
"""
import random

import torch


def seed_everything(trial):
    """Python's, torch's (and numpy's, when installed) generators from the trial's seed."""
    random.seed(trial.seed)
    torch.manual_seed(trial.seed)
    try:
        import numpy

        numpy.random.seed(trial.seed % (2**32))
    except ImportError:
        pass
    torch.set_num_threads(max(1, trial.threads))


def device(trial=None):
    """The trial's GPU when the worker gave it one (CUDA_VISIBLE_DEVICES), else the CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Checkpointer:
    """Keeps the named objects (anything with state_dict()/load_state_dict())
    in the trial's checkpoint: restored at construction when one is there,
    saved with save(step)."""

    FILE = "torch_state.pt"

    def __init__(self, trial, **objects):
        self.trial = trial
        self.objects = objects
        self.start_epoch = 0
        path = trial.checkpoint_dir / self.FILE
        if path.exists():
            state = torch.load(path, map_location="cpu")
            for name, obj in objects.items():
                if name in state:
                    obj.load_state_dict(state[name])
            self.start_epoch = trial.resume_step

    def save(self, step):
        """Writes every object's state and stores the checkpoint (returns
        once it is stored); a resumed attempt starts at `step`."""
        path = self.trial.checkpoint_dir / self.FILE
        if self.trial.is_rank0:
            tmp = path.with_suffix(".tmp")
            torch.save({name: obj.state_dict() for name, obj in self.objects.items()}, tmp)
            tmp.replace(path)
        self.trial.save_checkpoint(step)
