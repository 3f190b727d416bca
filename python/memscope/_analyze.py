"""memscope.analyze: the binary's `summary --json` as typed results.

    a = memscope.analyze("snapshot.pickle")
    a.peak.allocated.bytes, a.peak_step, a.top_sites[0].label
    wandb.log(a.scalars())        # or mlflow.log_metrics(a.scalars())
    a                             # in Jupyter: the summary, compact
    a.report()                    # in Jupyter: the whole HTML report, offline

The fields are those of docs/json.md's summary section, bytes as ints,
times in microseconds (*_epoch_us since the Unix epoch, *_us from the
first event). Each device's whole JSON object is kept in .raw for the
fields not mapped here (inference, timeline_at_peak…). Analysis and its
parts hold no reference to the binary; the summary text _repr_html_ shows
and the report page are made when first asked for.
"""

from __future__ import annotations

import html
import json
import os
import tempfile
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from ._binary import MemscopeError, run

SCHEMA = "memscope/v1"
QUANTITIES = ("requested", "allocated", "active", "reserved")


@dataclass(frozen=True)
class Numbers:
    """The four numbers at a moment, bytes: requested (what the program
    asked for), allocated (rounded blocks handed out), active (allocated
    plus blocks freed but still in use by a stream), reserved (segments
    held from CUDA)."""
    requested: int
    allocated: int
    active: int
    reserved: int

    @classmethod
    def _from(cls, d):
        return cls(*(int(d[q]) for q in QUANTITIES))


@dataclass(frozen=True)
class Peak:
    """One quantity's highest value, reached after event event_index."""
    bytes: int
    event_index: int
    time_epoch_us: int

    @classmethod
    def _from(cls, d):
        return cls(int(d["bytes"]), int(d["event_index"]), int(d["time_epoch_us"]))


@dataclass(frozen=True)
class Peaks:
    """Each quantity's own peak (they need not share a moment)."""
    requested: Peak
    allocated: Peak
    active: Peak
    reserved: Peak

    @classmethod
    def _from(cls, d):
        return cls(*(Peak._from(d[q]) for q in QUANTITIES))


@dataclass(frozen=True)
class Range:
    """A record_function range around the peak."""
    name: str
    start_epoch_us: int
    end_epoch_us: int

    @classmethod
    def _from(cls, d):
        return cls(d["name"], int(d["start_epoch_us"]), int(d["end_epoch_us"]))


@dataclass(frozen=True)
class Frame:
    name: str
    filename: str
    line: int

    @classmethod
    def _from(cls, d):
        return None if d is None else cls(d["name"], d["filename"], int(d["line"]))

    def __str__(self):
        return "%s:%d %s" % (self.filename, self.line, self.name)


@dataclass(frozen=True)
class Site:
    """A source line holding memory at the peak. kind: user, library,
    python, none (no Python frame), before (allocated before recording
    began) or unrecorded; caller is the user's frame that called into a
    library site, as text."""
    label: str
    kind: str
    frame: Optional[Frame]
    caller: Optional[str]
    bytes: int
    requested: int
    blocks: int
    share: float
    stack: List[Frame]
    stack_is_free_site: bool

    @classmethod
    def _from(cls, d):
        return cls(d["label"], d["kind"], Frame._from(d.get("frame")), d.get("caller"), int(d["bytes"]),
                   int(d["requested"]), int(d["blocks"]), float(d["share"]),
                   [Frame._from(f) for f in d.get("stack") or []], bool(d.get("stack_is_free_site")))


@dataclass(frozen=True)
class Finding:
    """kind: leak, fragmentation or oom; problem is False for a clean bill."""
    kind: str
    problem: bool
    text: str

    @classmethod
    def _from(cls, d):
        return cls(d["kind"], bool(d["problem"]), d["text"])


@dataclass(frozen=True)
class Fix:
    """One of advise's fixes: removes bytes from the peak's moment, new_peak
    the predicted allocated peak of the step with it."""
    name: str
    term: str
    cost: str
    cost_rank: int
    removes: int
    blocks: int
    new_peak: int
    new_peak_event_index: int
    ranks: int = 0
    chunks: int = 0

    @classmethod
    def _from(cls, d):
        return cls(d["name"], d["term"], d["cost"], int(d["cost_rank"]), int(d["removes"]), int(d["blocks"]),
                   int(d["new_peak"]), int(d["new_peak_event_index"]), int(d.get("ranks") or 0),
                   int(d.get("chunks") or 0))


@dataclass(frozen=True)
class OpBytes:
    """Bytes live at the peak by the profiler's operator (with --trace)."""
    op: str
    bytes: int
    blocks: int

    @classmethod
    def _from(cls, d):
        return cls(d["op"], int(d["bytes"]), int(d["blocks"]))


@dataclass(frozen=True)
class StepRow:
    """One step of the step x phase table, allocated bytes: floor (at the
    step's first event), after (after its last), peak (the highest inside
    it) and the phase holding it, and phase_peaks: each phase's highest
    peak in the step (with gradient accumulation, the highest of its
    micro-batches'), by phase name, for the phases the step has."""
    step: int
    floor: int
    after: int
    peak: int
    peak_phase: str
    phase_peaks: Dict[str, int]
    holds_peak: bool

    @classmethod
    def _from(cls, d):
        return cls(int(d["step"]), int(d["floor"]), int(d["after"]), int(d["peak"]), d["peak_phase"],
                   {k: int(v) for k, v in d["phase_peaks"].items()}, bool(d["holds_peak"]))


@dataclass(frozen=True)
class StepTable:
    """The step x phase table `memscope peak` prints: phases are the
    columns in order, rows one per step; peak_step and peak_phase name the
    phase holding the device's peak (peak_step None outside the steps)."""
    phases: List[str]
    rows: List[StepRow]
    peak_step: Optional[int]
    peak_phase: str

    @classmethod
    def _from(cls, d):
        d = d or {}
        return cls(list(d.get("phases") or []), [StepRow._from(r) for r in d.get("rows") or []],
                   None if d.get("peak_step") is None else int(d["peak_step"]), d.get("peak_phase", ""))


@dataclass(frozen=True)
class PrivatePool:
    """A private pool (a CUDA graph's, a torch.cuda.MemPool's) at a moment,
    bytes. Its free bytes (reserved - allocated) serve only its own graph's
    replays, and empty_cache() does not release them."""
    pool: tuple
    reserved: int
    allocated: int
    free: int
    segments: int

    @classmethod
    def _from(cls, d):
        return cls(tuple(int(x) for x in d["pool"]), int(d["reserved"]), int(d["allocated"]), int(d["free"]),
                   int(d["segments"]))


@dataclass(frozen=True)
class Device:
    """One CUDA device of the snapshot: the four numbers at the start, at
    the allocated peak and at the end, each quantity's own peak, when the
    peak happens (offset, step, phase, ranges), what holds it (sites,
    categories), and the findings."""
    device: int
    start: Numbers
    at_peak: Numbers
    end: Numbers
    peaks: Peaks
    device_used: Optional[int]
    device_used_peak: Optional[int]
    peak_offset_us: int
    duration_us: int
    times_recorded: bool
    peak_ranges: List[Range]
    peak_step: Optional[int]
    peak_phase: str
    steps: int
    steps_source: str
    steps_from: str
    top_sites: List[Site]
    live_blocks_at_peak: int
    events: int
    segments: int
    blocks: int
    active_blocks: int
    ooms: int
    categories_at_peak: Dict[str, int]
    findings: List[Finding]
    fixes: List[Fix]
    warnings: List[str]
    ops_at_peak: List[OpBytes] = field(default_factory=list)
    ops_covered: Optional[float] = None
    private_pools_at_peak: List[PrivatePool] = field(default_factory=list)
    private_pools_at_end: List[PrivatePool] = field(default_factory=list)
    step_table: StepTable = field(default_factory=lambda: StepTable([], [], None, ""))
    # The end state as torch.cuda.memory_stats() counts it: segment,
    # inactive_split, inactive_split_bytes (each torch's NAME.all.current).
    end_stats: Dict[str, int] = field(default_factory=dict)
    # torch's num_alloc_retries over the recording; None where it cannot be
    # told (the recording began late, or the allocator model does not
    # follow it).
    alloc_retries: Optional[int] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def _from(cls, d):
        opt = lambda k: None if d.get(k) is None else int(d[k])  # noqa: E731
        return cls(
            device=int(d["device"]), start=Numbers._from(d["start"]), at_peak=Numbers._from(d["at_peak"]),
            end=Numbers._from(d["end"]), peaks=Peaks._from(d["peaks"]), device_used=opt("device_used"),
            device_used_peak=opt("device_used_peak"), peak_offset_us=int(d["peak_offset_us"]),
            duration_us=int(d["duration_us"]), times_recorded=bool(d["times_recorded"]),
            peak_ranges=[Range._from(r) for r in d["peak_ranges"]], peak_step=opt("peak_step"),
            peak_phase=d["peak_phase"], steps=int(d["steps"]), steps_source=d["steps_source"],
            steps_from=d["steps_from"], top_sites=[Site._from(s) for s in d["top_sites"]],
            live_blocks_at_peak=int(d["live_blocks_at_peak"]), events=int(d["events"]),
            segments=int(d["segments"]), blocks=int(d["blocks"]), active_blocks=int(d["active_blocks"]),
            ooms=int(d["ooms"]), categories_at_peak={k: int(v) for k, v in d["categories_at_peak"].items()},
            findings=[Finding._from(f) for f in d["findings"]], fixes=[Fix._from(f) for f in d["fixes"]],
            warnings=list(d["warnings"]), ops_at_peak=[OpBytes._from(o) for o in d.get("ops_at_peak") or []],
            ops_covered=None if d.get("ops_covered") is None else float(d["ops_covered"]),
            private_pools_at_peak=[PrivatePool._from(p) for p in d.get("private_pools_at_peak") or []],
            private_pools_at_end=[PrivatePool._from(p) for p in d.get("private_pools_at_end") or []],
            step_table=StepTable._from(d.get("step_table")),
            end_stats={k: int(v) for k, v in (d.get("end_stats") or {}).items()},
            alloc_retries=opt("num_alloc_retries"), raw=d)

    def finding(self, kind):
        """The finding of that kind (leak, fragmentation, oom), or None."""
        return next((f for f in self.findings if f.kind == kind), None)

    def scalars(self, prefix=""):
        """The headline numbers as a flat dict of numbers, keyed like
        torch.cuda.memory_stats() where torch has the same quantity
        ("allocated_bytes.all.peak": the recording's allocated peak,
        "….all.current": the value at its end; "num_ooms": the OOMs
        recorded, torch's count when the recording began with the process;
        "num_alloc_retries": the cudaMalloc retries, when they can be told;
        "segment.all.current", "inactive_split.all.current" and
        "inactive_split_bytes.all.current" from the end state's segments),
        and memscope.* for the rest. Keys whose value is unknown are left
        out."""
        s = {}
        for q in QUANTITIES:
            s["%s_bytes.all.peak" % q] = getattr(self.peaks, q).bytes
            s["%s_bytes.all.current" % q] = getattr(self.end, q)
        s["num_ooms"] = self.ooms
        if self.alloc_retries is not None:
            s["num_alloc_retries"] = self.alloc_retries
        for k, v in sorted(self.end_stats.items()):
            s["%s.all.current" % k] = v
        for q in QUANTITIES:
            s["memscope.at_peak.%s_bytes" % q] = getattr(self.at_peak, q)
        if self.peak_step is not None:
            s["memscope.peak_step"] = self.peak_step
        s["memscope.peak_offset_s"] = self.peak_offset_us / 1e6
        s["memscope.duration_s"] = self.duration_us / 1e6
        s["memscope.steps"] = self.steps
        s["memscope.events"] = self.events
        s["memscope.segments"] = self.segments
        s["memscope.ooms"] = self.ooms
        if self.device_used is not None:
            s["memscope.device_used_bytes"] = self.device_used
        if self.device_used_peak is not None:
            s["memscope.device_used_peak_bytes"] = self.device_used_peak
        for kind in ("leak", "fragmentation", "oom"):
            f = self.finding(kind)
            if f is not None:
                s["memscope.%s" % kind] = int(f.problem)
        for cat, n in sorted(self.categories_at_peak.items()):
            s["memscope.at_peak.category.%s_bytes" % cat.replace(" ", "_")] = n
        if self.fixes:
            s["memscope.best_fix.new_peak_bytes"] = min(f.new_peak for f in self.fixes)
        return {prefix + k: v for k, v in s.items()}


@dataclass(repr=False)
class Analysis:
    """memscope's summary of one snapshot: one Device per CUDA device
    recorded, in device order. The attributes of the first device
    (a.peaks, a.peak_step, a.top_sites…) are also the Analysis's, for the
    common one-device-per-process snapshot."""
    source: str
    format: str
    protocol: int
    devices: List[Device]
    warnings: List[str]
    path: str = ""
    trace: Optional[str] = None
    _html: Optional[str] = field(default=None, repr=False, compare=False)
    _text: Optional[str] = field(default=None, repr=False, compare=False)

    @classmethod
    def _from_doc(cls, doc, path, trace=None):
        if not isinstance(doc, dict) or doc.get("schema") != SCHEMA or doc.get("kind") != "summary":
            raise MemscopeError("memscope summary --json %s: not a %s summary document (schema %r, kind %r)"
                                % (path, SCHEMA, doc.get("schema") if isinstance(doc, dict) else None,
                                   doc.get("kind") if isinstance(doc, dict) else None))
        files = doc.get("files") or []
        if len(files) != 1:
            raise MemscopeError("memscope summary --json %s: %d files in the document, want 1" % (path, len(files)))
        f = files[0]
        return cls(source=f["source"], format=f["format"], protocol=int(f.get("protocol") or 0),
                   devices=[Device._from(d) for d in f["devices"]], warnings=list(f.get("warnings") or []),
                   path=path, trace=trace)

    def __repr__(self):
        parts = []
        for d in self.devices:
            where = "step %d %s" % (d.peak_step, d.peak_phase) if d.peak_step is not None else "outside the steps"
            problems = [f.kind for f in d.findings if f.problem]
            parts.append("device %d: allocated peak %d bytes (reserved %d) at %s%s" % (
                d.device, d.peaks.allocated.bytes, d.peaks.reserved.bytes, where,
                "; " + ", ".join(problems) if problems else ""))
        return "<memscope.Analysis of %s: %s>" % (self.source, "; ".join(parts) or "no CUDA device")

    def device(self, n=None):
        """Device n (its CUDA index); the first when n is None."""
        if not self.devices:
            raise LookupError("%s: no CUDA device in the snapshot" % self.source)
        if n is None:
            return self.devices[0]
        for d in self.devices:
            if d.device == n:
                return d
        raise LookupError("%s: no CUDA device %d (devices: %s)" % (
            self.source, n, ", ".join(str(d.device) for d in self.devices)))

    def __getattr__(self, name):
        # Only called for names Analysis lacks: a Device field of the first device.
        if name.startswith("_") or name not in Device.__dataclass_fields__:
            raise AttributeError("%r object has no attribute %r" % (type(self).__name__, name))
        return getattr(self.device(), name)

    def scalars(self, device=None, prefix=""):
        """Device.scalars of device (the first by default): a flat dict for
        wandb.log(a.scalars()) or mlflow.log_metrics(a.scalars())."""
        return self.device(device).scalars(prefix)

    def _args(self, command, *flags):
        args = [command] + list(flags)
        if self.trace:
            args += ["--trace=" + self.trace]
        # "--": a path that starts with "-" is a path, not a flag.
        return args + ["--", self.path]

    def html(self):
        """The `memscope report` page of this snapshot (and trace), as text:
        one self-contained page that inlines ECharts and loads nothing from
        the network (about 1.1-1.7 MB)."""
        if self._html is None:
            with tempfile.TemporaryDirectory(prefix="memscope-") as tmp:
                out = os.path.join(tmp, "report.html")
                _check(self._args("report", "-o", out), capture_output=True, encoding="utf-8", errors="replace")
                with open(out, encoding="utf-8") as f:
                    self._html = f.read()
        return self._html

    def text(self):
        """`memscope summary`'s text for this snapshot (and trace)."""
        if self._text is None:
            self._text = _check(self._args("summary"), capture_output=True, encoding="utf-8",
                                errors="replace").stdout
        return self._text

    def report(self):
        """The whole `memscope report` page, shown in Jupyter (in an
        iframe) when it is a cell's value; .html is its text, .save(path)
        writes it."""
        return Report(self.html())

    def _repr_html_(self):
        # Compact: the summary's text (a few KB), not the 1-2 MB page;
        # a.report() shows the page.
        return ('<div class="memscope-summary"><pre style="font-size:12px;line-height:1.3;white-space:pre">%s</pre>'
                '<p style="font-size:12px;color:#666">The whole report, with its charts (offline, 1-2 MB): '
                '<code>.report()</code> of this analysis.</p></div>' % html.escape(self.text()))


class Report:
    """A `memscope report` page. In Jupyter it shows in an iframe: the page
    is whole, with its own scripts and styles, so it neither breaks nor is
    broken by the notebook's."""

    def __init__(self, page):
        self.html = page

    def save(self, path):
        """Write the page to path (a file to open in a browser or attach)."""
        with open(os.fspath(path), "w", encoding="utf-8") as f:
            f.write(self.html)

    def __repr__(self):
        return "<memscope.Report: a %d-byte HTML page>" % len(self.html.encode("utf-8"))

    def _repr_html_(self):
        return ('<iframe srcdoc="%s" style="width:100%%;height:720px;border:1px solid #ddd" '
                'sandbox="allow-scripts allow-popups"></iframe>' % html.escape(self.html, quote=True))


def _check(args, **kwargs):
    r = run(args, **kwargs)
    if r.returncode != 0:
        err = (r.stderr or "").strip()
        raise MemscopeError("memscope %s: exit status %d%s" % (" ".join(args), r.returncode,
                                                              (": " + err) if err else ""),
                            returncode=r.returncode, stderr=r.stderr or "", cmd=["memscope"] + list(args))
    return r


def analyze(path, trace=None):
    """Run `memscope summary --json` on the snapshot at path (with the
    torch.profiler trace of the same run when given) and return its
    Analysis. MemscopeError, with the binary's exit status and stderr,
    when it fails; BinaryNotFoundError when there is no binary."""
    path = os.fspath(path)
    args = ["summary", "--json"]
    if trace is not None:
        trace = os.fspath(trace)
        args += ["--trace=" + trace]
    # "--": a path that starts with "-" ("-x.pickle", "--run=DIR") is a
    # path, not a flag.
    r = _check(args + ["--", path], capture_output=True, encoding="utf-8", errors="replace")
    # The report (_repr_html_) is made later, perhaps from another directory.
    path, trace = os.path.abspath(path), trace and os.path.abspath(trace)
    try:
        doc = json.loads(r.stdout)
    except ValueError as e:
        raise MemscopeError("memscope %s: output is not JSON: %s" % (" ".join(args + [path]), e),
                            returncode=r.returncode, stderr=r.stderr or "") from e
    return Analysis._from_doc(doc, path, trace)
