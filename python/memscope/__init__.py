"""memscope: where did the GPU memory go, and what to change so the job fits.

    import memscope
    with memscope.record("snapshot.pickle"):    # needs torch
        train()
    a = memscope.analyze("snapshot.pickle")     # runs the memscope binary
    a.peaks.allocated.bytes, a.peak_step, a.top_sites
    wandb.log(a.scalars())                      # or mlflow.log_metrics(a.scalars())
    a                                           # in Jupyter: the summary, compact
    a.report()                                  # in Jupyter: the whole HTML report, offline

In IPython or Jupyter, `%load_ext memscope` adds the %%memscope cell magic:
it records the cell with the allocator's history and shows its analysis.

The memscope command and `python -m memscope` run the Go binary the wheel
holds (memscope/bin/memscope); see memscope._binary for where it is looked
for otherwise.
"""

from ._analyze import (Analysis, Device, Finding, Fix, Frame, Numbers, OpBytes, Peak, Peaks, PrivatePool, Range,
                       Report, Site, StepRow, StepTable, analyze)
from ._binary import BinaryNotFoundError, MemscopeError, find_binary
from ._magic import load_ipython_extension
from ._record import rank_path, record
from ._version import __version__

__all__ = [
    "record", "rank_path", "analyze", "Analysis", "Device", "Numbers", "Peak", "Peaks", "Range", "Frame",
    "Site", "Finding", "Fix", "OpBytes", "StepTable", "StepRow", "PrivatePool", "Report", "MemscopeError",
    "BinaryNotFoundError", "find_binary", "load_ipython_extension", "__version__",
]
