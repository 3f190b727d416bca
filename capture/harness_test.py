"""Tests of the harness's torch-free logic; run with plain python3 (no torch):

    python3 -m unittest capture/harness_test.py
"""

import contextlib
import io
import json
import os
import pickle
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


class RewriteTest(unittest.TestCase):
    rules = harness.path_rules("/home/u/proj", ["/opt/venv/lib/python3.12/site-packages"],
                               ["/usr/lib/python3.12"])

    def test_prefixes(self):
        cases = {
            "/opt/venv/lib/python3.12/site-packages/torch/nn/modules/linear.py":
                "<site-packages>/torch/nn/modules/linear.py",
            "/usr/lib/python3.12/contextlib.py": "<python>/contextlib.py",
            "/home/u/proj/train.py": "<repo>/train.py",
            "??": "??",
            "/elsewhere/x.py": "/elsewhere/x.py",
        }
        for old, want in cases.items():
            self.assertEqual(harness.rewrite_path(old, self.rules), want)

    def test_longest_prefix_wins(self):
        rules = harness.path_rules("/home/u", ["/home/u/venv/site-packages"], [])
        self.assertEqual(harness.rewrite_path("/home/u/venv/site-packages/a.py", rules),
                         "<site-packages>/a.py")

    def test_snapshot_sharing_kept(self):
        fr = {"name": "f", "filename": "/home/u/proj/train.py", "line": 3}
        frames = [fr]
        snap = {
            "segments": [{"frames": [], "blocks": [{"frames": frames}]}],
            "device_traces": [[{"action": "alloc", "frames": frames},
                               {"action": "free_requested", "frames": frames}]],
        }
        harness.rewrite_snapshot_paths(snap, self.rules)
        self.assertEqual(fr["filename"], "<repo>/train.py")
        back = pickle.loads(pickle.dumps(snap, protocol=4))
        tr = back["device_traces"][0]
        self.assertIs(tr[0]["frames"], tr[1]["frames"])
        self.assertIs(tr[0]["frames"], back["segments"][0]["blocks"][0]["frames"])


class WindowTest(unittest.TestCase):
    def test_window_peak_is_max_of_phases(self):
        start = {"allocated_start": 10, "requested_start": 9, "reserved_start": 20, "active_start": 10}
        rows = [
            {"peak_allocated": 50, "peak_requested": 49, "peak_reserved": 60, "peak_active": 55},
            {"peak_allocated": 70, "peak_requested": 65, "peak_reserved": 80, "peak_active": 70},
        ]
        w = harness.window_summary(start, rows, {"allocated_end": 30})
        self.assertEqual((w["max_allocated"], w["max_requested"], w["max_reserved"], w["max_active"]),
                         (70, 65, 80, 70))
        self.assertEqual(w["allocated_end"], 30)
        self.assertEqual(harness.window_summary(start, [], {})["max_allocated"], 10)


def _step(model, F, ids):
    h = model.model(ids)
    logits = model.lm_head(h)
    return F.cross_entropy(logits, ids)


class SourceLinesTest(unittest.TestCase):
    def test_lines(self):
        got = harness.source_lines(_step, ("lm_head", "cross_entropy"))
        first = _step.__code__.co_firstlineno
        self.assertEqual(got["lm_head"]["line"], first + 2)
        self.assertEqual(got["cross_entropy"]["line"], first + 3)
        self.assertTrue(got["lm_head"]["file"].endswith("harness_test.py"))


class CLITest(unittest.TestCase):
    def test_annotation_name(self):
        self.assertEqual(harness.annotation_name(3, "forward"), "memscope/step/3/forward")

    def test_parser(self):
        args = harness.build_parser().parse_args(["scenario", "oom", "--out", "x", "--cap", "5"])
        self.assertEqual((args.scenario, args.out, args.cap, args.width), ("oom", "x", 5, None))
        with self.assertRaises(SystemExit), contextlib.redirect_stderr(io.StringIO()):
            harness.build_parser().parse_args(["scenario", "nope", "--out", "x"])

    def test_scenarios_listed_without_torch(self):
        self.assertEqual(harness.main(["scenarios"]), 0)



class RankFileTest(unittest.TestCase):
    # The same table is in capture/names_test.go: the two sides must agree.
    def test_names(self):
        cases = [
            (("snapshot", ".pickle", 0, 1), "snapshot.pickle"),
            (("snapshot", ".pickle", 3, 4), "snapshot.rank3.pickle"),
            (("snapshot.oom", ".pickle", 1, 2), "snapshot.oom.rank1.pickle"),
            (("trace", ".json.gz", 0, 2), "trace.rank0.json.gz"),
            (("capture", ".json", 0, 1), "capture.json"),
            (("point", ".json", 7, 8), "point.rank7.json"),
        ]
        for args, want in cases:
            self.assertEqual(harness.rank_file(*args), want)

    def test_dist_env(self):
        self.assertEqual(harness.dist_env({}),
                         {"rank": 0, "world": 1, "local_rank": 0, "local_world": 1})
        env = {"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2"}
        self.assertEqual(harness.dist_env(env),
                         {"rank": 3, "world": 4, "local_rank": 1, "local_world": 2})
        self.assertEqual(harness.dist_env({"WORLD_SIZE": "x"})["world"], 1)


class ParseTest(unittest.TestCase):

    def test_rank_coords(self):
        env = harness.dist_env({"RANK": "5", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "4"})
        self.assertEqual(harness.rank_coords({}, env), {"node": 1, "local_rank": 1})
        self.assertEqual(harness.rank_coords({"GROUP_RANK": "3"}, env), {"node": 3, "local_rank": 1})
        self.assertEqual(harness.rank_coords({"MEMSCOPE_COORDS": "dp=2, tp=1,pp=x,=4,bad"}, env),
                         {"node": 1, "local_rank": 1, "dp": 2, "tp": 1})
    def test_steps(self):
        self.assertEqual(harness.parse_steps("3-4"), (3, 4))
        self.assertEqual(harness.parse_steps("2"), (2, 2))
        self.assertIsNone(harness.parse_steps(""))
        for bad in ("4-3", "-1", "a", "1-b"):
            with self.assertRaises(ValueError):
                harness.parse_steps(bad)

    def test_workload_kind(self):
        cases = {"mlp": "mlp", "llama": "llama", "vit": "vit", "pkg.mod:make": "custom",
                 "mod:f": "custom", "gpt": None, "pkg.mod": None, "pkg.:f": None, "m:f-g": None}
        for name, want in cases.items():
            self.assertEqual(harness.workload_kind(name), want, name)

    def test_micro_batches(self):
        self.assertEqual(harness.micro_batches(8, 0), [8])
        self.assertEqual(harness.micro_batches(8, 8), [8])
        self.assertEqual(harness.micro_batches(8, 3), [3, 3, 2])
        self.assertEqual(harness.micro_batches(8, 4), [4, 4])

    def test_exit_status(self):
        cases = [(None, 0), (SystemExit(), 0), (SystemExit(0), 0), (SystemExit(3), 3),
                 (SystemExit(256 + 5), 5), (SystemExit("bye"), 1), (KeyboardInterrupt(), 130),
                 (RuntimeError("x"), 1)]
        for exc, want in cases:
            self.assertEqual(harness.exit_status(exc)[0], want, repr(exc))
        self.assertEqual(harness.exit_status(SystemExit("bye"))[1], "bye")

    def test_oom_message(self):
        self.assertTrue(harness.is_oom_message("CUDA out of memory. Tried to allocate 2.00 GiB"))
        self.assertTrue(harness.is_oom_message("CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling"))
        self.assertFalse(harness.is_oom_message("shape mismatch"))

    def test_run_parser(self):
        p = harness.build_parser()
        args = p.parse_args(["run", "--out", "d", "--profile-steps", "3-4", "--", "train.py",
                             "--lr", "3", "--out", "x"])
        self.assertIsNone(harness.check_args(args))
        self.assertEqual(args.script, ["train.py", "--lr", "3", "--out", "x"])
        self.assertEqual((args.out, args.max_entries, args.measure_steps), ("d", 1000000, "2-5"))
        args = p.parse_args(["run", "--out", "d", "--", "-m", "pkg.train", "-v"])
        self.assertIsNone(harness.check_args(args))
        self.assertEqual(args.script, ["-m", "pkg.train", "-v"])
        for bad in (["run", "--out", "d"], ["run", "--out", "d", "--"],
                    ["run", "--out", "d", "--profile-steps", "4-3", "--", "t.py"]):
            self.assertIsNotNone(harness.check_args(p.parse_args(bad)), bad)

    def test_point_parser(self):
        p = harness.build_parser()
        args = p.parse_args(["point", "--out", "d", "--workload", "llama", "--batch", "8",
                             "--precision", "bf16", "--memory-fraction", "0.2", "--snapshot"])
        self.assertIsNone(harness.check_args(args))
        self.assertEqual((args.batch, args.precision, args.mode, args.optimizer, args.steps,
                          args.warmup, args.snapshot), (8, "bf16", "train", "adamw", 3, 1, True))
        for bad in (["--workload", "gpt", "--batch", "1"], ["--workload", "mlp", "--batch", "0"],
                    ["--workload", "mlp", "--batch", "1", "--memory-fraction", "2"]):
            self.assertIsNotNone(harness.check_args(p.parse_args(["point", "--out", "d"] + bad)))
        with self.assertRaises(SystemExit), contextlib.redirect_stderr(io.StringIO()):
            p.parse_args(["point", "--out", "d", "--workload", "mlp", "--batch", "1",
                          "--precision", "fp8"])

    def test_bad_usage_exit_2_without_torch(self):
        with contextlib.redirect_stderr(io.StringIO()):
            self.assertEqual(harness.main(["run", "--out", "d"]), harness.EXIT_ENV)
        with contextlib.redirect_stderr(io.StringIO()):
            self.assertEqual(harness.main(["point", "--out", "d", "--workload", "gpt", "--batch", "1"]),
                             harness.EXIT_ENV)


class Sink(object):
    """Records what a PhaseTracker asks for."""

    def __init__(self):
        self.log = []
        self.open = []

    def open_range(self, name):
        self.log.append("open " + name)
        self.open.append(name)
        return name

    def close_range(self, handle):
        self.log.append("close " + handle)
        self.assertTop(handle)

    def assertTop(self, handle):
        if self.open[-1] != handle:
            raise AssertionError("ranges not nested: closing %s, open %s" % (handle, self.open))
        self.open.pop()

    def boundary(self, prev, nxt):
        self.log.append("boundary %s -> %s" % (prev, nxt))

    def step_end(self, step):
        self.log.append("step_end %d" % step)


def ranges(log):
    return [l[5:] for l in log if l.startswith("open ")]


class PhaseTrackerTest(unittest.TestCase):
    def drive(self, events):
        sink = Sink()
        tr = harness.PhaseTracker(sink)
        for e in events.split():
            getattr(tr, e)()
        tr.finish()
        self.assertEqual(sink.open, [])
        return sink.log, tr

    def test_plain_loop(self):
        # zero_grad first, as many loops do; several modules per forward
        ev = ("zero_grad_begin zero_grad_end forward forward backward_begin forward backward_end "
              "optimizer_begin optimizer_end ") * 3
        log, tr = self.drive(ev)
        want = []
        for s in range(3):
            if s > 0:
                want.append("memscope/step/%d/optimizer" % (s - 1))  # zero_grad frees step s-1's grads
            want += ["memscope/step/%d/%s" % (s, p) for p in ("forward", "backward", "optimizer")]
        self.assertEqual(ranges(log), want)
        self.assertEqual(tr.steps_seen, 3)
        self.assertEqual([l for l in log if l.startswith("step_end")],
                         ["step_end 0", "step_end 1", "step_end 2"])

    def test_zero_grad_after_step(self):
        log, _ = self.drive("forward backward_begin backward_end optimizer_begin optimizer_end "
                            "zero_grad_begin zero_grad_end forward")
        self.assertEqual(ranges(log), ["memscope/step/0/forward", "memscope/step/0/backward",
                                       "memscope/step/0/optimizer", "memscope/step/0/optimizer",
                                       "memscope/step/1/forward"])

    def test_accumulation_and_two_optimizers(self):
        ev = ("forward backward_begin backward_end forward backward_begin backward_end "
              "optimizer_begin optimizer_end optimizer_begin optimizer_end forward")
        log, _ = self.drive(ev)
        self.assertEqual(ranges(log), ["memscope/step/0/forward", "memscope/step/0/backward",
                                       "memscope/step/0/forward", "memscope/step/0/backward",
                                       "memscope/step/0/optimizer", "memscope/step/0/optimizer",
                                       "memscope/step/1/forward"])

    def test_closure_inside_step_and_recompute_in_backward(self):
        log, _ = self.drive("optimizer_begin forward backward_begin backward_end optimizer_end "
                            "forward backward_begin forward backward_end")
        self.assertEqual(ranges(log), ["memscope/step/0/optimizer", "memscope/step/1/forward",
                                       "memscope/step/1/backward"])

    def test_backward_without_module(self):
        log, _ = self.drive("backward_begin backward_end optimizer_begin optimizer_end "
                            "backward_begin backward_end")
        self.assertEqual(ranges(log), ["memscope/step/0/backward", "memscope/step/0/optimizer",
                                       "memscope/step/1/backward"])

    def test_boundaries_partition(self):
        log, _ = self.drive("forward backward_begin backward_end optimizer_begin optimizer_end")
        self.assertEqual([l for l in log if l.startswith("boundary")], [
            "boundary (-1, 'setup') -> (0, 'forward')",
            "boundary (0, 'forward') -> (0, 'backward')",
            "boundary (0, 'backward') -> (0, 'other')",
            "boundary (0, 'other') -> (0, 'optimizer')",
            "boundary (0, 'optimizer') -> (0, 'other')",
            "boundary (0, 'other') -> None",
        ])

    def test_inference_only(self):
        log, tr = self.drive("forward forward forward")
        self.assertEqual(ranges(log), ["memscope/step/0/forward"])
        self.assertEqual(tr.steps_seen, 1)

    def test_wants_forward(self):
        tr = harness.PhaseTracker(Sink())
        self.assertTrue(tr.wants_forward())
        tr.forward()
        self.assertFalse(tr.wants_forward())
        tr.backward_begin()
        self.assertFalse(tr.wants_forward())
        tr.backward_end()
        self.assertTrue(tr.wants_forward())
        tr.optimizer_begin()
        self.assertFalse(tr.wants_forward())


class MeasureWindowTest(unittest.TestCase):
    def test_actions(self):
        w = harness.MeasureWindow((2, 3))
        cases = [
            ((1, "other"), (2, "forward"), "reset"),
            ((2, "forward"), (2, "backward"), "row"),
            ((3, "other"), (4, "forward"), "row"),
            ((4, "forward"), (4, "backward"), None),
            ((1, "forward"), (1, "backward"), None),
            ((3, "other"), None, "row"),
            ((-1, "setup"), (0, "forward"), None),
        ]
        for prev, nxt, want in cases:
            self.assertEqual(w.action(prev, nxt), want, (prev, nxt))
        self.assertIsNone(harness.MeasureWindow(None).action((2, "forward"), (2, "backward")))


def stats(alloc, req, res, act):
    return {"allocated_bytes.all.peak": alloc, "requested_bytes.all.peak": req,
            "reserved_bytes.all.peak": res, "active_bytes.all.peak": act,
            "allocated_bytes.all.current": alloc // 2, "reserved_bytes.all.current": res}


class PointSummaryTest(unittest.TestCase):
    def test_summarize(self):
        rows = [harness.phase_row(0, "forward", stats(500, 400, 600, 500), 700)]  # warm-up
        rows += [harness.phase_row(1, "forward", stats(100, 90, 200, 100), 300),
                 harness.phase_row(1, "backward", stats(150, 140, 200, 150), 300),
                 harness.phase_row(2, "forward", stats(120, 90, 220, 100), 320),
                 harness.phase_row(2, "optimizer", stats(130, 125, 220, 130), 330)]
        got = harness.summarize_point(rows, [3.0, 1.0, 2.0, 10.0], (1, 2))
        self.assertEqual(got["phases"]["forward"],
                         {"allocated": 120, "requested": 90, "reserved": 220, "active": 100})
        self.assertEqual(got["peak"], {"allocated": 150, "requested": 140, "reserved": 220,
                                       "active": 150})
        self.assertEqual(got["device_used"], 330)
        self.assertEqual(got["step_time_ms"], 2.5)
        self.assertEqual(sorted(got["phases"]), ["backward", "forward", "optimizer"])
        self.assertIsNone(harness.summarize_point([], [], (1, 1))["step_time_ms"])

    def test_fold_and_step_line(self):
        run = harness.fold_peaks({}, stats(10, 9, 20, 10))
        harness.fold_peaks(run, stats(5, 9, 30, 12))
        self.assertEqual(run, {"allocated": 10, "requested": 9, "reserved": 30, "active": 12})
        s = stats(10, 9, 20, 10)
        line = harness.step_line(4, "optimizer_end", s, free=70, total=100)
        self.assertEqual((line["step"], line["device_used"], line["outside_reserved"]), (4, 30, 10))
        self.assertEqual(set(harness.STEP_STATS_KEYS) - set(line), set())
        json.dumps(line)


if __name__ == "__main__":
    unittest.main()
