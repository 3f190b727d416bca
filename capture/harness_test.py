"""Tests of the harness's torch-free logic; run with plain python3 (no torch):

    python3 -m unittest capture/harness_test.py
"""

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
        with self.assertRaises(SystemExit):
            harness.build_parser().parse_args(["scenario", "nope", "--out", "x"])

    def test_scenarios_listed_without_torch(self):
        self.assertEqual(harness.main(["scenarios"]), 0)


if __name__ == "__main__":
    unittest.main()
