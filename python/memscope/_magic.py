"""%%memscope: record a notebook cell with the CUDA allocator's history and
show where its memory went, like memray's %%memray_flamegraph.

    %load_ext memscope

    %%memscope
    train(model, steps=20)

The cell runs under memscope.record (torch's _record_memory_history; a
dump at an out-of-memory error, taken while the failing step's tensors
are alive); then memscope.analyze reads the snapshot and the cell's output
is the analysis: the summary, compact. Options, on the %%memscope line:

    -o PATH, --output PATH   write the snapshot there (default: a new
                             temporary folder, named in the output)
    --report                 show the whole HTML report (offline, 1-2 MB)
                             instead of the summary
    --max-entries N          torch's ring buffer of trace entries
    --stacks python|all      all: C++ frames too (slow)

Importing memscope needs no IPython and no torch: IPython calls
load_ipython_extension on %load_ext, and torch is imported when the cell
starts recording.
"""

import argparse
import os
import shlex
import tempfile

from ._analyze import analyze
from ._record import record


class UsageError(ValueError):
    """A %%memscope line that does not parse."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError("%%%%memscope: %s (usage: %s)" % (message, self.format_usage().strip()))


def _parser():
    p = _Parser(prog="%%memscope", add_help=False)
    p.add_argument("-o", "--output", default=None)
    p.add_argument("--report", action="store_true")
    p.add_argument("--max-entries", type=int, default=1_000_000)
    p.add_argument("--stacks", choices=("python", "all"), default="python")
    return p


def parse_line(line):
    """The options of a %%memscope line, as an argparse namespace."""
    try:
        words = shlex.split(line or "")
    except ValueError as e:
        raise UsageError("%%%%memscope: %s" % e) from e
    return _parser().parse_args(words)


def run_cell(shell, line, cell, display):
    """Run cell in shell under memscope.record with the options of line,
    then display its analysis (or its whole report); returns the Analysis.
    An error in the cell is shown by the shell, as without the magic; the
    snapshot then holds the state at the error (an OOM's at the failure)."""
    opt = parse_line(line)
    path = opt.output
    if path is None:
        path = os.path.join(tempfile.mkdtemp(prefix="memscope-cell-"), "snapshot.pickle")
    rec = record(path, max_entries=opt.max_entries, stacks=opt.stacks)
    failed = None
    try:
        with rec:
            result = shell.run_cell(cell)
            failed = getattr(result, "error_in_exec", None)
            if failed is not None:
                # Raised inside the block, so that record keeps the dump an
                # out-of-memory error made; the shell has shown it already.
                raise failed
    except BaseException as e:
        if failed is None or e is not failed:
            raise
    a = analyze(rec.path)
    display(a.report() if opt.report else a)
    return a


def load_ipython_extension(ipython):
    """%load_ext memscope: register the %%memscope cell magic."""

    def memscope(line, cell):
        from IPython.display import display
        run_cell(ipython, line, cell, display)

    memscope.__doc__ = __doc__
    ipython.register_magic_function(memscope, magic_kind="cell", magic_name="memscope")
