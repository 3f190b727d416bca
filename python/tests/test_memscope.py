"""Torch-free tests of the memscope package and of build_wheels.py, run by
python/wheel_test.go's TestPythonUnit (python3 -m unittest discover -s
python/tests). The package is the source checkout's (python/ first on
sys.path), which holds no binary: tests that need one point $MEMSCOPE_BIN
at a shell script. The real binary, in an installed wheel, is
TestWheel's."""

import base64
import csv
import hashlib
import importlib.util
import io
import json
import os
import pathlib
import stat
import subprocess
import sys
import tempfile
import textwrap
import types
import unittest
import zipfile
from unittest import mock

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, PYTHON_DIR)

import build_wheels  # noqa: E402
import memscope  # noqa: E402
from memscope import _binary  # noqa: E402

HAVE_TORCH = importlib.util.find_spec("torch") is not None
POSIX = os.name == "posix"


def script(dir, name, body):
    """An executable shell script at dir/name."""
    path = os.path.join(dir, name)
    with open(path, "w") as f:
        f.write("#!/bin/sh\n" + textwrap.dedent(body))
    os.chmod(path, 0o755)
    return path


def clean_env(**extra):
    """os.environ without the variables that choose a rank or a binary."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE", _binary.ENV_BIN, "_MEMSCOPE_FROM_PYTHON")}
    env.update(extra)
    return env


class RankPathTest(unittest.TestCase):
    cases = [
        # (name, environment, path, rank argument, want)
        ("single process", {}, "snap.pickle", None, "snap.pickle"),
        ("single process placeholder", {}, "out/snap_{rank}.pickle", None, "out/snap_0.pickle"),
        ("torchrun rank", {"WORLD_SIZE": "4", "RANK": "3", "LOCAL_RANK": "1"}, "snap.pickle", None,
         "snap.rank3.pickle"),
        ("torchrun placeholder", {"WORLD_SIZE": "2", "RANK": "1"}, "r{rank}/snap.pickle", None, "r1/snap.pickle"),
        ("world of one ignores RANK", {"WORLD_SIZE": "1", "RANK": "0"}, "snap.pickle", None, "snap.pickle"),
        ("LOCAL_RANK alone", {"LOCAL_RANK": "2"}, "snap.pickle", None, "snap.rank2.pickle"),
        ("RANK not a number", {"WORLD_SIZE": "2", "RANK": "x"}, "snap.pickle", None, "snap.pickle"),
        ("explicit rank", {}, "snap.pickle", 5, "snap.rank5.pickle"),
        ("explicit rank wins", {"WORLD_SIZE": "8", "RANK": "7"}, "snap.pickle", 2, "snap.rank2.pickle"),
        ("no extension", {"WORLD_SIZE": "2", "RANK": "1"}, os.path.join("out", "snap"), None,
         os.path.join("out", "snap.rank1.pickle")),
        ("other extension", {"WORLD_SIZE": "2", "RANK": "0"}, "snap.pkl", None, "snap.rank0.pkl"),
    ]

    def test_rank_path(self):
        for name, env, path, rank, want in self.cases:
            with self.subTest(name), mock.patch.dict(os.environ, clean_env(**env), clear=True):
                got = memscope.rank_path(path, rank)
                self.assertEqual(got, want, "rank_path(%r, %r) with %s = %r, want %r" % (path, rank, env, got, want))


class RecordTest(unittest.TestCase):
    def test_argument_checks(self):
        bad = [
            ("stacks", dict(stacks="cpp"), "stacks must be 'python' or 'all'"),
            ("max_entries zero", dict(max_entries=0), "max_entries must be positive"),
            ("max_entries negative", dict(max_entries=-5), "max_entries must be positive"),
            ("max_entries not a number", dict(max_entries="many"), "invalid literal"),
        ]
        for name, kwargs, msg in bad:
            with self.subTest(name), self.assertRaises(ValueError) as cm:
                memscope.record("snap.pickle", **kwargs)
            self.assertIn(msg, str(cm.exception))

    def test_defaults(self):
        r = memscope.record(pathlib.Path("out") / "snap.pickle")
        self.assertEqual(r.requested_path, os.path.join("out", "snap.pickle"))
        self.assertEqual((r.max_entries, r.stacks, r.on_oom), (1_000_000, "python", True))
        self.assertIsNone(r.path)  # set at __enter__, after rank_path
        self.assertFalse(r.oom_written)
        r = memscope.record("s.pickle", max_entries="5000", stacks="all", on_oom=False)
        self.assertEqual((r.max_entries, r.stacks, r.on_oom), (5000, "all", False))

    def test_torch_is_imported_lazily(self):
        # A fresh interpreter: importing memscope, making a record and
        # decorating a function import no torch.
        code = ("import sys, memscope\n"
                "r = memscope.record('s.pickle')\n"
                "f = r(lambda: 1)\n"
                "a = memscope.analyze\n"
                "print('torch' in sys.modules)\n")
        out = subprocess.run([sys.executable, "-c", code], cwd=PYTHON_DIR, capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout.strip(), "False")

    @unittest.skipIf(HAVE_TORCH, "torch is installed")
    def test_without_torch(self):
        called = []

        @memscope.record("snap.pickle")
        def train(x):
            "Train."
            called.append(x)

        self.assertEqual((train.__name__, train.__doc__), ("train", "Train."))
        for name, enter in [("with", lambda: memscope.record("snap.pickle").__enter__()), ("decorator", lambda: train(1))]:
            with self.subTest(name), self.assertRaises(ImportError) as cm:
                enter()
            self.assertIn("memscope.record needs torch", str(cm.exception))
        self.assertEqual(called, [], "the decorated function ran without a recording")


@unittest.skipUnless(POSIX, "shell scripts stand in for the binary")
class BinaryTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="memscope-test-")
        self.addCleanup(lambda: subprocess.run(["rm", "-rf", self.tmp]))
        self.assertFalse(os.path.exists(_binary.bundled_path()),
                         "the source checkout holds a binary at %s" % _binary.bundled_path())

    def run_module(self, args, **env):
        return subprocess.run([sys.executable, "-m", "memscope"] + args, cwd=PYTHON_DIR, capture_output=True,
                              text=True, env=clean_env(PATH=env.pop("PATH", self.tmp), **env))

    def test_missing_binary(self):
        empty = os.path.join(self.tmp, "empty")
        os.mkdir(empty)
        with mock.patch.dict(os.environ, clean_env(PATH=empty), clear=True):
            with self.assertRaises(memscope.BinaryNotFoundError) as cm:
                memscope.find_binary()
            for want in ("python/build.sh", "MEMSCOPE_BIN", "PATH", _binary.bundled_path()):
                self.assertIn(want, str(cm.exception))
            with self.assertRaises(memscope.BinaryNotFoundError):
                memscope.analyze("snap.pickle")
        r = self.run_module(["summary", "x"], PATH=empty)
        self.assertEqual(r.returncode, _binary.EXIT_NO_BINARY)
        self.assertIn("python/build.sh", r.stderr)
        self.assertEqual(r.stdout, "")

    def test_bad_env_bin(self):
        missing = os.path.join(self.tmp, "nope")
        with mock.patch.dict(os.environ, clean_env(MEMSCOPE_BIN=missing), clear=True):
            with self.assertRaises(memscope.BinaryNotFoundError) as cm:
                memscope.find_binary()
        self.assertIn(missing, str(cm.exception))

    def test_path_skips_python_scripts(self):
        # pip's console script for this package, first on PATH, is not the binary.
        shim_dir, bin_dir = os.path.join(self.tmp, "shim"), os.path.join(self.tmp, "bin")
        os.mkdir(shim_dir)
        os.mkdir(bin_dir)
        with open(os.path.join(shim_dir, "memscope"), "w") as f:
            f.write("#!%s\nimport sys\nfrom memscope._binary import main\nsys.exit(main())\n" % sys.executable)
        os.chmod(os.path.join(shim_dir, "memscope"), 0o755)
        real = script(bin_dir, "memscope", "echo real\n")
        with mock.patch.dict(os.environ, clean_env(PATH=shim_dir), clear=True):
            with self.assertRaises(memscope.BinaryNotFoundError):
                memscope.find_binary()
        with mock.patch.dict(os.environ, clean_env(PATH=shim_dir + os.pathsep + bin_dir), clear=True):
            self.assertEqual(memscope.find_binary(), real)
        # A binary from PATH that runs python -m memscope again stops there.
        loop = os.path.join(self.tmp, "loop")
        os.mkdir(loop)
        script(loop, "memscope", 'exec "%s" -m memscope "$@"\n' % sys.executable)
        r = self.run_module(["summary"], PATH=loop, PYTHONPATH=PYTHON_DIR)
        self.assertEqual(r.returncode, _binary.EXIT_NO_BINARY, r.stderr)

    def test_argv_and_exit_status(self):
        fake = script(self.tmp, "fake", 'printf "%s|" "$@"; echo err >&2; exit 3\n')
        for name, cmd in [("python -m memscope", [sys.executable, "-m", "memscope"]),
                          ("console entry point", [sys.executable, "-c",
                                                   "import sys; from memscope._binary import main; sys.exit(main())"])]:
            with self.subTest(name):
                r = subprocess.run(cmd + ["summary", "--json", "a b.pickle", ""], cwd=PYTHON_DIR,
                                   capture_output=True, text=True, env=clean_env(MEMSCOPE_BIN=fake))
                self.assertEqual((r.returncode, r.stdout, r.stderr), (3, "summary|--json|a b.pickle||", "err\n"))

    def test_cannot_run(self):
        # Executable but not a program this system runs (a binary of
        # another platform looks the same to exec).
        junk = os.path.join(self.tmp, "junk")
        with open(junk, "wb") as f:
            f.write(b"\x00\x01not a program\n")
        os.chmod(junk, 0o755)
        r = subprocess.run([sys.executable, "-m", "memscope", "--version"], cwd=PYTHON_DIR, capture_output=True,
                           text=True, env=clean_env(MEMSCOPE_BIN=junk))
        self.assertEqual(r.returncode, _binary.EXIT_CANNOT_RUN, r.stderr)
        self.assertIn("cannot run " + junk, r.stderr)
        with mock.patch.dict(os.environ, clean_env(MEMSCOPE_BIN=junk), clear=True):
            with self.assertRaises(memscope.MemscopeError) as cm:
                memscope.analyze("x")
        self.assertIn("cannot run " + junk, str(cm.exception))

    def test_analyze_errors(self):
        cases = [
            ("exit status", 'echo "memscope: stat x: no such file" >&2; exit 2\n', 2, "no such file"),
            ("not JSON", "echo hello\n", 0, "not JSON"),
            ("not a summary", 'echo \'{"schema": "memscope/v1", "kind": "peak", "files": []}\'\n', None,
             "not a memscope/v1 summary"),
        ]
        for name, body, status, msg in cases:
            fake = script(self.tmp, "fake-" + name.replace(" ", "-"), body)
            with self.subTest(name), mock.patch.dict(os.environ, clean_env(MEMSCOPE_BIN=fake), clear=True):
                with self.assertRaises(memscope.MemscopeError) as cm:
                    memscope.analyze("x")
                self.assertIn(msg, str(cm.exception))
                self.assertEqual(cm.exception.returncode, status)
                if status == 2:
                    self.assertEqual(cm.exception.stderr, "memscope: stat x: no such file\n")
                    self.assertEqual(cm.exception.cmd, ["memscope", "summary", "--json", "--", "x"])

    def test_analyze_paths_like_flags(self):
        # A path that starts with "-" reaches the binary after "--", so it
        # is read as a path: "-x.pickle" is a file, "--run=DIR" is not --run.
        argv = os.path.join(self.tmp, "argv")
        fake = script(self.tmp, "fake-argv", 'printf "%%s\\n" "$@" > %s; exit 2\n' % argv)
        for path, trace in [("-x.pickle", None), ("--run=DIR", None), ("-s.pickle", "-t.json")]:
            with self.subTest(path), mock.patch.dict(os.environ, clean_env(MEMSCOPE_BIN=fake), clear=True):
                with self.assertRaises(memscope.MemscopeError):
                    memscope.analyze(path, trace=trace)
                with open(argv) as f:
                    got = f.read().splitlines()
                want = ["summary", "--json"] + (["--trace=" + trace] if trace else []) + ["--", path]
                self.assertEqual(got, want)

    def test_analyze_step_table_and_pools(self):
        # The step x phase table and the private pools of summary --json
        # become typed values holding the document's numbers.
        doc = summary_doc()
        device = doc["files"][0]["devices"][0]
        table, pools = device["step_table"], device["private_pools_at_end"]
        path = os.path.join(self.tmp, "summary.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        fake = script(self.tmp, "fake-summary", "cat '%s'\n" % path)
        with mock.patch.dict(os.environ, clean_env(MEMSCOPE_BIN=fake), clear=True):
            a = memscope.analyze("x")
        t = a.step_table
        self.assertEqual((t.phases, t.peak_step, t.peak_phase), (table["phases"], 1, "backward"))
        self.assertEqual(len(t.rows), 2)
        for got, want in zip(t.rows, table["rows"]):
            self.assertIsInstance(got, memscope.StepRow)
            self.assertEqual((got.step, got.floor, got.after, got.peak, got.peak_phase, got.phase_peaks, got.holds_peak),
                             tuple(want[k] for k in ("step", "floor", "after", "peak", "peak_phase", "phase_peaks",
                                                     "holds_peak")))
        self.assertEqual(a.private_pools_at_peak, [])
        self.assertEqual(a.private_pools_at_end, [memscope.PrivatePool((0, 1), 2097152, 512, 2096640, 1)])

    def test_scalars_torch_keys(self):
        # scalars() carries torch's memory_stats() names for what summary
        # --json gives: num_ooms from ooms, num_alloc_retries, NAME.all.current
        # from end_stats.
        doc = summary_doc()
        path = os.path.join(self.tmp, "summary.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        fake = script(self.tmp, "fake-summary", "cat '%s'\n" % path)
        with mock.patch.dict(os.environ, clean_env(MEMSCOPE_BIN=fake), clear=True):
            s = memscope.analyze("x").scalars()
        want = {"num_ooms": 3, "num_alloc_retries": 4, "segment.all.current": 7, "inactive_split.all.current": 2,
                "inactive_split_bytes.all.current": 1536, "allocated_bytes.all.peak": 900,
                "reserved_bytes.all.current": 2097152, "memscope.ooms": 3}
        self.assertEqual({k: s.get(k) for k in want}, want)
        # A count summary could not tell (null) is left out, not 0.
        doc["files"][0]["devices"][0]["num_alloc_retries"] = None
        with open(path, "w") as f:
            json.dump(doc, f)
        with mock.patch.dict(os.environ, clean_env(MEMSCOPE_BIN=fake), clear=True):
            s = memscope.analyze("x").scalars()
        self.assertNotIn("num_alloc_retries", s)
        self.assertEqual(s["num_ooms"], 3)


def summary_doc():
    """A summary --json document of one device: an allocated peak of 900
    bytes, 2 MiB reserved at the end, 3 OOMs, a step table, a private pool
    and end_stats."""
    zero = {q: 0 for q in ("requested", "allocated", "active", "reserved")}
    end = dict(zero, reserved=2097152)
    table = {"phases": ["forward", "backward", "optimizer"], "peak_step": 1, "peak_phase": "backward",
             "rows": [{"step": 0, "floor": 100, "after": 300, "peak": 700, "peak_phase": "optimizer",
                       "phase_peaks": {"forward": 400, "backward": 600, "optimizer": 700}, "holds_peak": False},
                      {"step": 1, "floor": 300, "after": 300, "peak": 900, "peak_phase": "backward",
                       "phase_peaks": {"forward": 500, "backward": 900}, "holds_peak": True}]}
    pools = [{"pool": [0, 1], "reserved": 2097152, "allocated": 512, "free": 2096640, "segments": 1}]
    peaks = {q: {"bytes": 0, "event_index": -1, "time_epoch_us": 0} for q in zero}
    peaks["allocated"] = {"bytes": 900, "event_index": 12, "time_epoch_us": 5}
    device = {"device": 0, "start": zero, "at_peak": zero, "end": end, "peaks": peaks,
              "device_used": None, "device_used_peak": None, "peak_offset_us": 0, "duration_us": 0,
              "times_recorded": True, "peak_ranges": [], "peak_step": 1, "peak_phase": "backward", "steps": 2,
              "steps_source": "harness", "steps_from": "memscope annotations", "top_sites": [],
              "live_blocks_at_peak": 0, "events": 0, "segments": 1, "blocks": 1, "active_blocks": 1, "ooms": 3,
              "num_alloc_retries": 4,
              "end_stats": {"segment": 7, "inactive_split": 2, "inactive_split_bytes": 1536},
              "categories_at_peak": {}, "findings": [], "fixes": [], "warnings": [],
              "private_pools_at_peak": [], "private_pools_at_end": pools, "step_table": table}
    return {"schema": "memscope/v1", "kind": "summary",
            "files": [{"source": "x", "format": "pickle", "devices": [device], "warnings": []}]}


class FakeTorch:
    """Stands in for torch in sys.modules: the calls memscope.record makes,
    recorded; _snapshot() returns the state at that call, numbered; a cell
    calls oom() to run out of memory as torch does (the observer first,
    then the error)."""

    def __init__(self):
        self.calls, self.snapshots, self.observers = [], 0, []
        fake = self

        class OutOfMemoryError(RuntimeError):
            pass

        def record_history(enabled="all", context=None, stacks=None, max_entries=None):
            fake.calls.append((enabled, context, stacks, max_entries))

        def snapshot():
            fake.snapshots += 1
            return {"segments": [], "device_traces": [[]], "taken": fake.snapshots}

        self.module = types.ModuleType("torch")
        self.module.cuda = types.SimpleNamespace(
            is_available=lambda: True, OutOfMemoryError=OutOfMemoryError,
            memory=types.SimpleNamespace(_record_memory_history=record_history, _snapshot=snapshot))
        self.module._C = types.SimpleNamespace(_cuda_attach_out_of_memory_observer=self.observers.append)

    def oom(self):
        for o in self.observers:
            o(0, 1 << 30, 0, 0)
        raise self.module.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 1.00 GiB")


class FakeShell:
    """Stands in for IPython's shell: register_magic_function keeps the
    magic; run_cell runs the cell's code in user_ns and, as IPython does,
    returns the error instead of raising it."""

    def __init__(self, **ns):
        self.magics, self.user_ns = {}, dict(ns)

    def register_magic_function(self, fn, magic_kind="line", magic_name=None):
        self.magics[magic_kind, magic_name or fn.__name__] = fn

    def run_cell(self, cell):
        try:
            exec(compile(cell, "<cell>", "exec"), self.user_ns)
        except Exception as e:
            return types.SimpleNamespace(error_in_exec=e)
        return types.SimpleNamespace(error_in_exec=None)


@unittest.skipUnless(POSIX, "a shell script stands in for the binary")
class MagicTest(unittest.TestCase):
    """%%memscope with torch and IPython absent: stubs for both, a shell
    script for the binary (summary --json answers summary_doc())."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="memscope-magic-")
        self.addCleanup(lambda: subprocess.run(["rm", "-rf", self.tmp]))
        doc = os.path.join(self.tmp, "summary.json")
        with open(doc, "w") as f:
            json.dump(summary_doc(), f)
        self.argv = os.path.join(self.tmp, "argv")
        self.bin = script(self.tmp, "fake-memscope", """\
            printf '%%s\\n' "$@" >> '%s'
            case "$1 $2" in
            "summary --json") cat '%s' ;;
            "report -o") printf '<!DOCTYPE html><html>the page</html>' > "$3" ;;
            *) echo "device 0: allocated peak 900 B <&>" ;;
            esac
            """ % (self.argv, doc))
        self.torch = FakeTorch()
        self.shown = []
        ipython_display = types.ModuleType("IPython.display")
        ipython_display.display = self.shown.append
        ipython = types.ModuleType("IPython")
        ipython.display = ipython_display
        patches = [mock.patch.dict(sys.modules, {"torch": self.torch.module, "IPython": ipython,
                                                 "IPython.display": ipython_display}),
                   mock.patch.dict(os.environ, clean_env(MEMSCOPE_BIN=self.bin), clear=True)]
        for p in patches:
            p.start()
            self.addCleanup(p.stop)
        self.shell = FakeShell(torch=self.torch)
        memscope.load_ipython_extension(self.shell)

    def magic(self, line, cell):
        self.assertEqual(list(self.shell.magics), [("cell", "memscope")])
        return self.shell.magics["cell", "memscope"](line, cell)

    def binary_calls(self):
        with open(self.argv) as f:
            return f.read().splitlines()

    def snapshot_taken(self, path):
        import pickle
        with open(path, "rb") as f:
            return pickle.load(f)["taken"]

    def test_records_the_cell_and_shows_the_analysis(self):
        path = os.path.join(self.tmp, "cell.pickle")
        self.magic("-o %s --max-entries 5000" % path, "x = 20 + 22\n")
        self.assertEqual(self.shell.user_ns["x"], 42)
        self.assertEqual(self.torch.calls, [("all", "all", "python", 5000), (None, None, None, None)])
        self.assertEqual(self.snapshot_taken(path), 1)
        self.assertEqual(self.binary_calls(), ["summary", "--json", "--", os.path.abspath(path)])
        [a] = self.shown
        self.assertIsInstance(a, memscope.Analysis)
        self.assertEqual((a.peaks.allocated.bytes, a.ooms, a.path), (900, 3, os.path.abspath(path)))
        # Shown compact: the summary's text, escaped, not the report page.
        compact = a._repr_html_()
        self.assertIn("<pre", compact)
        self.assertIn("device 0: allocated peak 900 B &lt;&amp;&gt;", compact)
        self.assertNotIn("<iframe", compact)
        self.assertEqual(self.binary_calls()[4:], ["summary", "--", os.path.abspath(path)])

    def test_report_option(self):
        self.magic("--report --stacks all", "pass\n")
        self.assertEqual(self.torch.calls[0][2], "all")
        [r] = self.shown
        self.assertIsInstance(r, memscope.Report)
        self.assertEqual(r.html, "<!DOCTYPE html><html>the page</html>")
        self.assertTrue(r._repr_html_().startswith('<iframe srcdoc="&lt;!DOCTYPE html&gt;'), r._repr_html_())
        calls = self.binary_calls()
        self.assertEqual(calls[:2], ["summary", "--json"])
        self.assertEqual(calls[4:6], ["report", "-o"])
        # The default snapshot: a new temporary folder's snapshot.pickle.
        self.assertTrue(calls[3].endswith(os.sep + "snapshot.pickle") and "memscope-cell-" in calls[3], calls)
        self.addCleanup(lambda: subprocess.run(["rm", "-rf", os.path.dirname(calls[3])]))

    def test_oom_keeps_the_dump_at_the_failure(self):
        # torch's observer writes the state at the OOM; the error reaches
        # the shell (which shows it) and the analysis is still shown.
        path = os.path.join(self.tmp, "oom.pickle")
        self.magic("-o " + path, "y = 1\ntorch.oom()\n")
        self.assertEqual(self.snapshot_taken(path), 1, "the end state overwrote the dump made at the OOM")
        self.assertEqual(self.torch.snapshots, 1)
        self.assertEqual(self.torch.calls[-1][0], None, "recording still on after the cell")
        self.assertEqual(len(self.shown), 1)

    def test_other_error_writes_the_end_state(self):
        path = os.path.join(self.tmp, "err.pickle")
        self.magic("-o " + path, "raise ValueError('bad batch')\n")
        self.assertEqual(self.snapshot_taken(path), 1)
        self.assertEqual(len(self.shown), 1)

    def test_without_torch(self):
        with mock.patch.dict(sys.modules, {"torch": None}):
            with self.assertRaises(ImportError) as cm:
                self.magic("", "ran = True\n")
        self.assertIn("memscope.record needs torch", str(cm.exception))
        self.assertNotIn("ran", self.shell.user_ns)
        self.assertEqual(self.shown, [])

    def test_bad_line(self):
        for line in ["--max-entries many", "--stacks cpp", "--nope", "'unclosed"]:
            with self.subTest(line), self.assertRaises(memscope._magic.UsageError) as cm:
                self.magic(line, "ran = True\n")
            self.assertIn("%%memscope", str(cm.exception))
        self.assertNotIn("ran", self.shell.user_ns)
        self.assertEqual(self.torch.calls, [])

    def test_import_needs_no_ipython(self):
        code = ("import sys, memscope\n"
                "print(callable(memscope.load_ipython_extension), 'IPython' in sys.modules, 'torch' in sys.modules)\n")
        out = subprocess.run([sys.executable, "-c", code], cwd=PYTHON_DIR, capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout.strip(), "True False False")


class SyntaxTest(unittest.TestCase):
    def test_python_38(self):
        # The wheel says Requires-Python >=3.8: its files parse as 3.8.
        import ast
        pkg = os.path.join(PYTHON_DIR, "memscope")
        for name in sorted(os.listdir(pkg)):
            if name.endswith(".py"):
                with self.subTest(name), open(os.path.join(pkg, name)) as f:
                    ast.parse(f.read(), name, feature_version=(3, 8))


class BuildWheelsTest(unittest.TestCase):
    def test_version_from_describe(self):
        cases = [
            ("", "291", "0.0.0.dev291"),
            ("v1.2.3-0-gabc1234", "40", "1.2.3"),
            ("v1.2.3-5-gabc1234", "45", "1.2.4.dev5"),
            ("v0.9-12-g0123abcd", "99", "0.10.dev12"),
            ("v2-0-gdeadbee", "1", "2"),
            ("release-3", "7", "0.0.0.dev7"),  # not a vN tag
        ]
        for describe, count, want in cases:
            got = build_wheels.version_from_describe(describe, count)
            self.assertEqual(got, want, "version_from_describe(%r, %r) = %r, want %r" % (describe, count, got, want))
            self.assertTrue(build_wheels.valid_version(got), got)

    def test_valid_version(self):
        for v in ["0.0.0.dev0", "1.2.3", "1.0rc1", "2.0.post1", "1!2.0", "0.1.0.dev4+g1234abc", "10.20.30a4"]:
            self.assertTrue(build_wheels.valid_version(v), v)
        for v in ["", "v1.2.3", "1.2.3-dev", "01.2", "1.2.3.dev", "1.2 3", "latest", "1.0-rc1", "1.2.3+"]:
            self.assertFalse(build_wheels.valid_version(v), v)

    def test_default_version(self):
        v = build_wheels.default_version()
        self.assertTrue(build_wheels.valid_version(v), v)

    def test_write_wheel(self):
        tmp = tempfile.mkdtemp(prefix="memscope-wheel-")
        self.addCleanup(lambda: subprocess.run(["rm", "-rf", tmp]))
        binary = b"\x7fELF not really a binary"
        path = build_wheels.write_wheel(tmp, "1.2.3.dev4", "manylinux_2_17_x86_64.manylinux2014_x86_64",
                                        binary, "memscope")
        self.assertEqual(os.path.basename(path), "memscope-1.2.3.dev4-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl")
        with zipfile.ZipFile(path) as z:
            names = z.namelist()
            for want in ["memscope/__init__.py", "memscope/__main__.py", "memscope/_analyze.py", "memscope/_binary.py",
                         "memscope/_record.py", "memscope/_version.py", "memscope/bin/memscope",
                         "memscope-1.2.3.dev4.dist-info/METADATA", "memscope-1.2.3.dev4.dist-info/WHEEL",
                         "memscope-1.2.3.dev4.dist-info/entry_points.txt", "memscope-1.2.3.dev4.dist-info/RECORD"]:
                self.assertIn(want, names)
            self.assertEqual(z.read("memscope/bin/memscope"), binary)
            self.assertEqual(stat.S_IMODE(z.getinfo("memscope/bin/memscope").external_attr >> 16), 0o755)
            self.assertEqual(stat.S_IMODE(z.getinfo("memscope/__init__.py").external_attr >> 16), 0o644)
            self.assertEqual(z.read("memscope/_version.py"), b'__version__ = "1.2.3.dev4"\n')
            wheel = z.read("memscope-1.2.3.dev4.dist-info/WHEEL").decode()
            self.assertIn("Root-Is-Purelib: false\n", wheel)
            self.assertIn("Tag: py3-none-manylinux_2_17_x86_64\nTag: py3-none-manylinux2014_x86_64\n", wheel)
            meta = z.read("memscope-1.2.3.dev4.dist-info/METADATA").decode()
            self.assertTrue(meta.startswith("Metadata-Version: 2.1\nName: memscope\nVersion: 1.2.3.dev4\n"), meta)
            self.assertIn("memscope = memscope._binary:main", z.read("memscope-1.2.3.dev4.dist-info/entry_points.txt").decode())
            rows = list(csv.reader(io.StringIO(z.read("memscope-1.2.3.dev4.dist-info/RECORD").decode())))
            self.assertEqual(sorted(r[0] for r in rows), sorted(names))
            for name, digest, size in rows:
                if name.endswith("/RECORD"):
                    self.assertEqual((digest, size), ("", ""))
                    continue
                data = z.read(name)
                want = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
                self.assertEqual((digest, int(size)), (want, len(data)), name)

    def test_reproducible(self):
        # The same inputs give the same bytes (fixed zip times and order).
        a, b = tempfile.mkdtemp(prefix="memscope-wheel-"), tempfile.mkdtemp(prefix="memscope-wheel-")
        self.addCleanup(lambda: subprocess.run(["rm", "-rf", a, b]))
        with mock.patch.dict(os.environ, {k: v for k, v in os.environ.items() if k != "SOURCE_DATE_EPOCH"}, clear=True):
            pa = build_wheels.write_wheel(a, "1.0", "win_amd64", b"MZ binary", "memscope.exe")
            pb = build_wheels.write_wheel(b, "1.0", "win_amd64", b"MZ binary", "memscope.exe")
        with open(pa, "rb") as fa, open(pb, "rb") as fb:
            self.assertEqual(fa.read(), fb.read())

    def test_bad_version_refused(self):
        with self.assertRaises(build_wheels.BuildError) as cm:
            build_wheels.build(tempfile.gettempdir(), "v1.0")
        self.assertIn("PEP 440", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
