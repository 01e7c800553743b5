"""The framework integrations: XGBoost, scikit-learn and PyTorch for real
(Debian packages them), Lightning, Keras and Hugging Face against stand-ins of
their public callback APIs (not packaged here)."""
import contextlib
import io
import json
import signal
import sys
import tempfile
import types
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))

from hpo._trial import Trial  # noqa: E402


def a_trial(**env):
    return Trial(environ={"HPO_TRIAL_ID": "t", "HPO_PARAMS": "{}", **env}, install_signals=False)


def reports(text):
    return [json.loads(l[len("hpo-metric "):]) for l in text.splitlines() if l.startswith("hpo-metric ")]


def stand_in(module, name):
    """A module `module` whose `name` is a bare callback base class."""
    mod = types.ModuleType(module)
    setattr(mod, name, type(name, (), {"__init__": lambda self: None}))
    sys.modules[module] = mod
    return getattr(mod, name)


class StandIns(unittest.TestCase):
    def test_lightning_reports_each_validation_and_stops_the_trainer(self):
        base = stand_in("lightning.pytorch", "Callback")
        sys.modules.setdefault("lightning", types.ModuleType("lightning"))
        from hpo.integrations.lightning import HpoLightningCallback

        t = a_trial()
        cb = HpoLightningCallback(t)
        self.assertIsInstance(cb, base)
        trainer = types.SimpleNamespace(current_epoch=0, sanity_checking=False, should_stop=False,
                                        callback_metrics={"val/loss": 0.5, "note": "x"})
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            cb.on_validation_end(trainer, None)
            trainer.current_epoch = 1
            t._stop = "prune"  # the worker's signal
            cb.on_validation_end(trainer, None)
        self.assertEqual(reports(out.getvalue()), [{"step": 0, "val_loss": 0.5}])
        self.assertTrue(trainer.should_stop)

    def test_keras_reports_each_epoch_and_stops_training(self):
        base = stand_in("keras.callbacks", "Callback")
        from hpo.integrations.keras import HpoKerasCallback

        t = a_trial()
        cb = HpoKerasCallback(t)
        self.assertIsInstance(cb, base)
        cb.model = types.SimpleNamespace(stop_training=False)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            cb.on_epoch_end(0, {"loss": 1.0, "val_accuracy": 0.7})
            self.assertFalse(cb.model.stop_training)
            t._stop = "cancel"
            cb.on_epoch_end(1, {"loss": 0.9})
        self.assertEqual(reports(out.getvalue()), [{"step": 0, "loss": 1.0, "val_accuracy": 0.7}])
        self.assertTrue(cb.model.stop_training)

    def test_hugging_face_reports_evaluations_and_stops_the_trainer(self):
        base = stand_in("transformers", "TrainerCallback")
        from hpo.integrations.huggingface import HpoTrainerCallback

        t = a_trial()
        cb = HpoTrainerCallback(t)
        self.assertIsInstance(cb, base)
        control = types.SimpleNamespace(should_training_stop=False)
        state = types.SimpleNamespace(global_step=500)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            cb.on_evaluate(None, state, control, metrics={"eval_loss": 0.4, "epoch": 1.0})
            self.assertFalse(cb.on_step_end(None, state, control).should_training_stop)
            t._stop = "drain"
            self.assertTrue(cb.on_step_end(None, state, control).should_training_stop)
        self.assertEqual(reports(out.getvalue()), [{"step": 500, "eval_loss": 0.4, "epoch": 1.0}])


class XGBoost(unittest.TestCase):
    def test_every_boosting_round_is_reported_and_a_prune_ends_training(self):
        import numpy as np
        import xgboost as xgb
        from hpo.integrations.xgboost import HpoCallback

        rng = np.random.default_rng(0)
        x = rng.normal(size=(200, 4))
        y = (x[:, 0] + x[:, 1] > 0).astype(int)
        dtrain, dvalid = xgb.DMatrix(x[:150], y[:150]), xgb.DMatrix(x[150:], y[150:])
        t = a_trial()

        class PruneAt(xgb.callback.TrainingCallback):  # the worker's signal during round 6
            def before_iteration(self, model, epoch, evals_log):
                if epoch == 6:
                    t._stop = "prune"
                return False

        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            booster = xgb.train({"objective": "binary:logistic", "eval_metric": "logloss"}, dtrain,
                                num_boost_round=50, evals=[(dvalid, "validation")],
                                callbacks=[PruneAt(), HpoCallback(t)], verbose_eval=False)
        got = reports(out.getvalue())
        self.assertEqual([r["step"] for r in got], list(range(6)))
        self.assertTrue(all("validation-logloss" in r for r in got))
        self.assertEqual(booster.num_boosted_rounds(), 7)  # the round under way ends, no other


class SkLearn(unittest.TestCase):
    def test_a_member_fits_its_bag_and_writes_every_part(self):
        import numpy as np
        from sklearn.linear_model import LogisticRegression
        from hpo.integrations.sklearn import fit, write_predictions

        rng = np.random.default_rng(1)
        x = rng.normal(size=(60, 3))
        y = (x[:, 0] > 0).astype(int) + (x[:, 1] > 1).astype(int)
        with tempfile.TemporaryDirectory() as d:
            rows = [i for i in range(40) if y[i] != 2][:30]  # a bag that misses class 2
            oob = [i for i in range(40) if i not in rows]
            Path(d, "plan.json").write_text(json.dumps(
                {"rows": rows, "features": [0, 1], "oob_rows": oob, "train_seed": 3, "member": 0}))
            t = a_trial(HPO_BAGGING_FILE=str(Path(d, "plan.json")), HPO_OUTPUT_DIR=d)
            model = fit(t, LogisticRegression(), x[:40], y[:40])
            self.assertEqual(model.n_features_in_, 2)
            pv = write_predictions(t, model, validation=(x[40:50], y[40:50]),
                                   test=(x[50:], y[50:]), train=(x[:40], y[:40]), classes=3)
            self.assertEqual(pv.shape, (10, 3))
            self.assertTrue(np.all(pv[:, 2] == 0))
            oob_lines = Path(d, "oob.csv").read_text().splitlines()
            self.assertEqual(oob_lines[0], "row_id,target,p0,p1,p2")
            self.assertEqual([int(l.split(",")[0]) for l in oob_lines[1:]], oob)
            self.assertEqual(len(Path(d, "test.csv").read_text().splitlines()), 11)


class Torch(unittest.TestCase):
    def test_the_checkpointer_restores_model_optimizer_and_step(self):
        import torch
        from hpo.integrations.torch import Checkpointer, seed_everything

        with tempfile.TemporaryDirectory() as d:
            t = Trial(environ={"HPO_CHECKPOINT_DIR": d, "HPO_SEED": "5"}, install_signals=False)
            seed_everything(t)
            model = torch.nn.Linear(3, 2)
            opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
            ck = Checkpointer(t, model=model, optimizer=opt)
            self.assertEqual(ck.start_epoch, 0)
            model(torch.ones(1, 3)).sum().backward()
            opt.step()
            ck.save(3)
            again = torch.nn.Linear(3, 2)
            opt2 = torch.optim.SGD(again.parameters(), lr=0.1, momentum=0.9)
            ck2 = Checkpointer(Trial(environ={"HPO_CHECKPOINT_DIR": d}, install_signals=False),
                               model=again, optimizer=opt2)
            self.assertEqual(ck2.start_epoch, 3)
            self.assertTrue(torch.equal(again.weight, model.weight))
            self.assertEqual(opt2.state_dict()["state"].keys(), opt.state_dict()["state"].keys())


if __name__ == "__main__":
    unittest.main()
