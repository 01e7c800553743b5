"""The hpo library's trial side, on its own (no worker): parameters, reports,
stops, checkpoints (with a stand-in for the worker's side of the control
folder) and predictions. Run: python3 -m unittest discover -s tests/python"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))

import hpo  # noqa: E402
from hpo._trial import Trial  # noqa: E402


def run_script(body, env, timeout=60):
    """A trial script in a child Python with the library on its path."""
    full = dict(os.environ, PYTHONPATH=str(ROOT / "python"), **env)
    return subprocess.Popen([sys.executable, "-c", body], env=full, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


class Params(unittest.TestCase):
    def test_values_come_typed_from_hpo_params_and_defaults_fill_the_rest(self):
        t = Trial(defaults={"lr": 0.1, "layers": 2, "opt": "adam", "bn": False},
                  environ={"HPO_TRIAL_ID": "t1", "HPO_PARAMS": '{"lr": 0.5, "layers": 3.0}'},
                  install_signals=False)
        self.assertEqual(t.params.lr, 0.5)
        self.assertEqual(t.params.layers, 3)
        self.assertIsInstance(t.params.layers, int)
        self.assertEqual(t.params.opt, "adam")
        self.assertIs(t.params.bn, False)
        with self.assertRaisesRegex(AttributeError, "no parameter 'momentum'.*bn, layers, lr, opt"):
            t.params.momentum

    def test_standalone_takes_arguments_over_defaults(self):
        t = Trial(defaults={"lr": 0.1, "epochs": 5, "use_bn": False},
                  argv=["data.csv", "--lr", "0.02", "--epochs=7", "--use-bn", "true", "--other", "x"],
                  environ={}, install_signals=False)
        self.assertFalse(t.in_hpo)
        self.assertEqual((t.params.lr, t.params.epochs, t.params.use_bn), (0.02, 7, True))
        self.assertNotIn("other", t.params)

    def test_a_value_that_does_not_fit_its_default_names_the_parameter(self):
        with self.assertRaisesRegex(ValueError, "parameter epochs: 2.5 is not a int"):
            Trial(defaults={"epochs": 5}, environ={"HPO_TRIAL_ID": "t", "HPO_PARAMS": '{"epochs": 2.5}'},
                  install_signals=False)


class Reports(unittest.TestCase):
    def test_reports_are_metric_lines_with_steps_and_only_rank_0_speaks(self):
        env = {"HPO_TRIAL_ID": "t1", "HPO_PARAMS": "{}"}
        p = run_script("import hpo, math\n"
                       "t = hpo.trial()\n"
                       "t.report(loss=1.5)\nt.report(loss=1.0, acc=0.5)\nt.report(7, loss=float('nan'))\n"
                       "t.final(loss=0.9)\n", env)
        out, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 0, err)
        lines = [json.loads(l[len("hpo-metric "):]) for l in out.splitlines()]
        self.assertEqual(lines, [{"step": 0, "loss": 1.5}, {"step": 1, "loss": 1.0, "acc": 0.5},
                                 {"step": 7}, {"final": True, "loss": 0.9}])
        self.assertIn("metric loss is nan", err)
        p = run_script("import hpo\nt = hpo.trial()\nt.report(loss=1)\nt.final(loss=1)\n",
                       dict(env, RANK="1"))
        out, err = p.communicate(timeout=60)
        self.assertEqual((p.returncode, out), (0, ""), err)


class Stops(unittest.TestCase):
    def stopped(self, body, sig, reason):
        with tempfile.TemporaryDirectory() as d:
            control = Path(d, "control")
            control.mkdir()
            if reason:
                (control / "stop_reason").write_text(reason + "\n")
            p = run_script(body, {"HPO_TRIAL_ID": "t1", "HPO_CONTROL_DIR": str(control)})
            first = p.stdout.readline()  # the script is ready
            self.assertEqual(first.strip(), "ready")
            p.send_signal(sig)
            out, err = p.communicate(timeout=60)
            return p.returncode, out, err

    LOOP = ("import hpo, os, select, signal\n"
            "t = hpo.trial()\n"
            "wake_r, wake_w = os.pipe()\n"  # a byte per signal: the stop wakes the select
            "os.set_blocking(wake_w, False)\n"
            "signal.set_wakeup_fd(wake_w)\n"
            "t.should_stop()\n"  # from here on the program stops itself
            "print('ready', flush=True)\n"
            "step = 0\n"
            "while not t.should_stop():\n"
            "    t.report(step, loss=1.0); step += 1\n"
            "    select.select([wake_r], [], [], 60)\n"
            "t.report(step, loss=2.0)\n"  # not printed: the trial stops
            "print('reason', t.stop_reason, t.checkpoint_on_stop)\n")

    def test_a_program_that_asks_gets_the_reason_and_reports_nothing_more(self):
        code, out, err = self.stopped(self.LOOP, signal.SIGTERM, "prune")
        self.assertEqual(code, 0, err)
        self.assertIn("reason prune False", out)
        self.assertNotIn('"loss": 2.0', out)

    def test_a_drain_is_sigusr1_and_asks_for_a_checkpoint(self):
        code, out, err = self.stopped(self.LOOP, signal.SIGUSR1, "drain")
        self.assertIn("reason drain True", out, (code, err))
        self.assertIn('"loss": 2.0', out)  # it goes on elsewhere: what it did still counts
        code, out, err = self.stopped(self.LOOP, signal.SIGUSR1, None)  # a worker that does not say
        self.assertIn("reason drain True", out)

    def test_a_program_that_never_asks_is_ended_by_trial_stopped(self):
        body = ("import hpo, signal\nt = hpo.trial()\n"
                "try:\n    print('ready', flush=True)\n    signal.pause()\n"
                "finally:\n    print('cleanup', flush=True)\n")
        code, out, err = self.stopped(body, signal.SIGTERM, "cancel")
        self.assertEqual(code, 0, err)
        self.assertIn("cleanup", out)


class Declaration(unittest.TestCase):
    def declared(self, body, **env):
        p = run_script("import hpo\nt = hpo.trial()\n" + body, {"HPO_TRIAL_ID": "t1", **env})
        out, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 0, err)
        return "hpo-checkpoint-on-stop" in out.splitlines()

    def test_only_a_program_that_keeps_checkpoints_and_asks_says_it_saves_on_a_stop(self):
        with tempfile.TemporaryDirectory() as d:
            ck = {"HPO_CHECKPOINT_DIR": d}
            self.assertFalse(self.declared("t.resume_step\n", **ck))  # never asks: ends on SIGUSR1
            self.assertFalse(self.declared("t.should_stop()\n", **ck))  # keeps no checkpoint
            self.assertTrue(self.declared("t.resume_step\nt.should_stop()\n", **ck))
            self.assertTrue(self.declared("t.stop_reason\nt.checkpoint_dir\n", **ck))

    def test_a_report_after_a_drain_is_printed_and_still_says_stop(self):
        t = Trial(environ={"HPO_TRIAL_ID": "t"}, install_signals=False)
        t._stop = "drain"
        import contextlib, io
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            self.assertFalse(t.report(3, loss=1.0))
        self.assertIn('"step": 3', out.getvalue())


class Checkpoints(unittest.TestCase):
    def test_save_waits_for_the_worker_and_resume_reads_the_step(self):
        with tempfile.TemporaryDirectory() as d:
            ck, control = Path(d, "checkpoint"), Path(d, "control")
            ck.mkdir()
            control.mkdir()
            body = ("import hpo\nt = hpo.trial()\nprint('resume', t.resume_step, flush=True)\n"
                    "t.should_stop()\n"  # it keeps checkpoints and asks: it saves on a drain
                    "(t.checkpoint_dir / 'w.bin').write_bytes(b'x' * 1000)\n"
                    "t.save_checkpoint(4, best=0.5)\nprint('saved', flush=True)\n")
            p = run_script(body, {"HPO_TRIAL_ID": "t1", "HPO_CHECKPOINT_DIR": str(ck),
                                  "HPO_CONTROL_DIR": str(control)})
            # The worker's side: read the lines, confirm the checkpoint.
            lines = [p.stdout.readline().strip() for _ in range(3)]
            self.assertEqual(lines, ["resume 0", "hpo-checkpoint-on-stop", "hpo-checkpoint"])
            state = json.loads((ck / "hpo_state.json").read_text())
            self.assertEqual((state["step"], state["best"]), (4, 0.5))
            (control / "checkpoint").write_text("1 stored\n")
            out, err = p.communicate(timeout=60)
            self.assertEqual((p.returncode, out.strip()), (0, "saved"), err)
            # The next attempt finds it.
            t = Trial(environ={"HPO_TRIAL_ID": "t1", "HPO_CHECKPOINT_DIR": str(ck)},
                      install_signals=False)
            self.assertEqual(t.resume_step, 4)
            self.assertEqual(t.checkpoint_state["best"], 0.5)

    def test_a_checkpoint_the_worker_could_not_store_is_an_error(self):
        with tempfile.TemporaryDirectory() as d:
            control = Path(d, "control")
            control.mkdir()
            (control / "checkpoint").write_text("1 failed\n")
            p = run_script("import hpo\nhpo.trial().save_checkpoint(1)\n",
                           {"HPO_TRIAL_ID": "t1", "HPO_CHECKPOINT_DIR": str(Path(d, "ck")),
                            "HPO_CONTROL_DIR": str(control)})
            out, err = p.communicate(timeout=60)
            self.assertNotEqual(p.returncode, 0)
            self.assertIn("could not store the checkpoint", err)


class Predictions(unittest.TestCase):
    def test_a_member_bags_its_rows_and_writes_validation_test_and_oob(self):
        with tempfile.TemporaryDirectory() as d:
            plan = {"member": 2, "train_seed": 77, "rows": [0, 0, 2], "features": [1],
                    "oob_rows": [1, 3], "n_rows": 4, "n_features": 2}
            Path(d, "bagging.json").write_text(json.dumps(plan))
            t = Trial(environ={"HPO_TRIAL_ID": "m", "HPO_BAGGING_FILE": str(Path(d, "bagging.json")),
                               "HPO_OUTPUT_DIR": d}, install_signals=False)
            x = [[1, 10], [2, 20], [3, 30], [4, 40]]
            y = [0, 1, 0, 1]
            self.assertTrue(t.data.is_member)
            self.assertEqual(t.data.member_index, 2)
            self.assertEqual(t.data.bag(x, y), ([[10], [10], [30]], [0, 0, 0]))
            self.assertEqual(t.data.oob(x, y), ([[20], [40]], [1, 1]))
            t.write_predictions(validation=([[0.2, 0.8], [0.6, 0.4]], [1, 0]),
                                oob=([[0.1, 0.9], [0.5, 0.5]], [1, 1]))
            self.assertEqual(Path(d, "validation.csv").read_text(),
                             "row_id,target,p0,p1\n0,1,0.2,0.8\n1,0,0.6,0.4\n")
            self.assertEqual(Path(d, "oob.csv").read_text().splitlines()[1:],
                             ["1,1,0.1,0.9", "3,1,0.5,0.5"])
            t.write_predictions(test=([1.5, 2.5], [1.0, 2.0], [7, 9]))
            self.assertEqual(Path(d, "test.csv").read_text(),
                             "row_id,target,value\n7,1,1.5\n9,2,2.5\n")
            with self.assertRaisesRegex(ValueError, r"write_predictions\(validation=...\): 2 predictions, 1 targets"):
                t.write_predictions(validation=([[0.5, 0.5], [1, 0]], [1]))

    def test_a_trial_that_is_no_member_trains_on_everything(self):
        t = Trial(environ={"HPO_TRIAL_ID": "t", "HPO_SEED": "12"}, install_signals=False)
        self.assertFalse(t.data.is_member)
        self.assertEqual(t.data.bag([[1, 2]], [3]), ([[1, 2]], [3]))
        self.assertEqual(t.data.seed, 12)


if __name__ == "__main__":
    unittest.main()
