package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/pflag"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/internal/units"
	"github.com/memscope/memscope/report"
	"github.com/memscope/memscope/trace"
)

// analysisOptions are the flags every analysis command shares.
type analysisOptions struct {
	json          bool
	device        int
	focus, ignore string
	top           int
	allocSizes    bool // keep each alloc's block size (pprof)
}

func (o *analysisOptions) define(fs *pflag.FlagSet) {
	fs.BoolVar(&o.json, "json", false, "write JSON instead of text; sizes are raw bytes")
	fs.IntVar(&o.device, "device", -1, "analyse only CUDA device `N`; -1 for every device")
	fs.IntVar(&o.top, "top", 15, "list the `N` largest sites")
	filterFlags(fs, &o.focus, &o.ignore)
	memoryFlag(fs)
}

// filterFlags defines --focus and --ignore, which every command that
// names sites takes: see sitesHelp.
func filterFlags(fs *pflag.FlagSet, focus, ignore *string) {
	fs.StringVar(focus, "focus", "", "count only frames whose file matches `REGEXP` when choosing sites (the rest fold as plumbing does)")
	fs.StringVar(ignore, "ignore", "", "fold frames whose file matches `REGEXP` instead of the default plumbing (torch, the standard library, generated code, memscope's harness, the HF Trainer, accelerate, Lightning; C++ always folds)")
}

// sitesHelp explains, in the help of the commands that name sites, how a
// site is chosen: attribution.Filter's rule.
const sitesHelp = `A site is the frame an allocation is charged to: the innermost frame of its
stack that is the user's code or library code, not plumbing. Plumbing folds
away: C++ frames, torch (nn.Module's _call_impl, autograd, _dynamo,
_functorch, utils/checkpoint.py, optim), inductor's generated code (the
user's line torch records next is the site), kernel wrappers (einops,
flash_attn, xformers), the standard library, frozen and generated modules,
memscope's harness, and training loops (the HF Trainer's trainer*.py,
transformers/utils, accelerate, Lightning). Every other module in
site-packages is library code and is kept: the logits of a Hugging Face
model are charged to its line in modeling_llama.py, shown with the user's
line that called into the library ("called from train.py:40 main"). Files
are matched with / separators, no drive letter, Windows paths in lower
case, and everything up to site-packages/ written <site-packages>/.
--ignore REGEXP replaces the plumbing list; --focus REGEXP counts only the
frames whose file matches.`

// analyze opens and analyses one snapshot.
func (o *analysisOptions) analyze(cc *cmdContext, path string) (*attribution.Analysis, error) {
	f, err := attribution.NewFilter(o.ignore, o.focus)
	if err != nil {
		return nil, usageErrorf("%v", err)
	}
	s, err := openSnapshot(cc, path)
	if err != nil {
		return nil, err
	}
	return attribution.Analyze(s, attribution.Options{Filter: f, Device: o.device, AllocSizes: o.allocSizes}), nil
}

// eachFile analyses every path and calls fn with each analysis; with --json
// the values fn returns are collected into one document of the given kind.
func (o *analysisOptions) eachFile(cc *cmdContext, kind string, paths []string, fn func(an *attribution.Analysis) (any, error)) error {
	doc := report.Doc{Schema: report.Schema, Kind: kind}
	for i, p := range paths {
		an, err := o.analyze(cc, p)
		if err != nil {
			return err
		}
		if !o.json && i > 0 {
			fmt.Fprintln(cc.stdout)
		}
		if !o.json {
			fmt.Fprintf(cc.stdout, "%s\n\n", p)
		}
		v, err := fn(an)
		if err != nil {
			return err
		}
		if o.json {
			doc.Files = append(doc.Files, report.FileJSON{Source: p, Devices: v})
		}
	}
	if o.json {
		return report.WriteJSON(cc.stdout, doc)
	}
	return nil
}

func peakFlags(fs *pflag.FlagSet) runFunc {
	var o analysisOptions
	o.define(fs)
	at := fs.String("at", "peak", "the `MOMENT`: peak, end, oom, oom:N, event:N, step:N:PHASE (that phase's peak), or a time after the first event such as 1.5s")
	tree := fs.Bool("tree", false, "print the call tree of the live blocks instead of the tables")
	tracePath := fs.String("trace", "", "join with the torch.profiler `TRACE` of the same run and group by operator too, or by category for an export_memory_timeline file")
	return func(cc *cmdContext, paths []string) error {
		var prof trace.Profile
		if *tracePath != "" {
			var err error
			if prof, err = openProfile(cc, *tracePath); err != nil {
				return badInput(err)
			}
		}
		tr, tl := prof.Trace, prof.Timeline
		return o.eachFile(cc, "peak", paths, func(an *attribution.Analysis) (any, error) {
			var out []report.MomentJSON
			for i, d := range an.Devices {
				m, err := d.ParseMoment(*at)
				if err != nil {
					return nil, usageErrorf("--at: %v", err)
				}
				var ops []attribution.OpBytes
				var covered float64
				if tr != nil {
					ops, covered = d.JoinTrace(tr).ByOp(m)
				}
				var sample trace.Sample
				if tl != nil {
					sample = tl.Sample(m.TimeUS)
				}
				if o.json {
					mj := report.Moment(an.Snapshot.Stacks, m, o.top)
					mj.Device = d.Device
					if tr != nil {
						mj.Ops, mj.OpsCovered = report.OpRows(ops, o.top), &covered
					}
					if tl != nil {
						mj.Timeline = report.TimelineSample(*tracePath, sample)
					}
					out = append(out, mj)
					continue
				}
				if i > 0 {
					fmt.Fprintln(cc.stdout)
				}
				if err := report.MomentText(cc.stdout, an, d, m, o.top, *tree); err != nil {
					return nil, err
				}
				if tr != nil {
					if err := report.OpBytesText(cc.stdout, ops, covered, m.Allocated, o.top); err != nil {
						return nil, err
					}
				}
				if tl != nil {
					if err := report.TimelineSampleText(cc.stdout, *tracePath, "at this moment", sample); err != nil {
						return nil, err
					}
				}
				if *at == "peak" && !*tree {
					fmt.Fprintln(cc.stdout)
					if err := report.PhasesText(cc.stdout, d); err != nil {
						return nil, err
					}
				}
			}
			return out, nil
		})
	}
}

func leaksFlags(fs *pflag.FlagSet) runFunc {
	var o analysisOptions
	o.define(fs)
	return func(cc *cmdContext, paths []string) error {
		return o.eachFile(cc, "leaks", paths, func(an *attribution.Analysis) (any, error) {
			var out []report.LeakJSON
			for _, d := range an.Devices {
				if o.json {
					out = append(out, report.Leak(an.Snapshot.Stacks, d))
				} else if err := report.LeakText(cc.stdout, an, d); err != nil {
					return nil, err
				}
			}
			return out, nil
		})
	}
}

func fragFlags(fs *pflag.FlagSet) runFunc {
	var o analysisOptions
	o.define(fs)
	return func(cc *cmdContext, paths []string) error {
		return o.eachFile(cc, "frag", paths, func(an *attribution.Analysis) (any, error) {
			out := []report.DeviceFragJSON{}
			for _, d := range an.Devices {
				if !o.json {
					if err := report.FragText(cc.stdout, d); err != nil {
						return nil, err
					}
					continue
				}
				df := report.DeviceFragJSON{Device: d.Device, Moments: []report.FragJSON{}}
				for _, f := range d.Frag {
					df.Moments = append(df.Moments, report.Frag(f))
				}
				out = append(out, df)
			}
			return out, nil
		})
	}
}

func oomFlags(fs *pflag.FlagSet) runFunc {
	var o analysisOptions
	o.define(fs)
	return func(cc *cmdContext, paths []string) error {
		return o.eachFile(cc, "oom", paths, func(an *attribution.Analysis) (any, error) {
			out := []report.OOMJSON{}
			for _, d := range an.Devices {
				if !o.json {
					if err := report.OOMText(cc.stdout, an, d, o.top); err != nil {
						return nil, err
					}
					continue
				}
				for _, oom := range d.OOMs {
					out = append(out, report.OOM(an.Snapshot.Stacks, d, oom, o.top))
				}
			}
			return out, nil
		})
	}
}

func diffFlags(fs *pflag.FlagSet) runFunc {
	var o analysisOptions
	o.define(fs)
	return func(cc *cmdContext, paths []string) error {
		pa, sweepA, err := diffInput(paths[0])
		if err != nil {
			return err
		}
		pb, sweepB, err := diffInput(paths[1])
		if err != nil {
			return err
		}
		switch {
		case sweepA && sweepB:
			return runDiffSweeps(cc, &o, paths[0], paths[1])
		case sweepA || sweepB:
			return usageErrorf("diff compares two sweep runs, or two snapshots (files or capture run directories), not one of each")
		}
		a, err := o.analyze(cc, pa)
		if err != nil {
			return err
		}
		b, err := o.analyze(cc, pb)
		if err != nil {
			return err
		}
		d := attribution.Compare(a, b)
		if o.json {
			return report.WriteJSON(cc.stdout, report.Doc{Schema: report.Schema, Kind: "diff",
				Result: map[string]any{"a": paths[0], "b": paths[1], "devices": report.DiffDoc(d)}})
		}
		return report.DiffText(cc.stdout, paths[0], paths[1], d, o.top)
	}
}

// checkOptions are the limits of 'memscope check'.
type checkOptions struct {
	analysisOptions
	maxPeak, maxReserved, maxLeak string
	maxFrag                       float64
	allowOOM                      bool
}

func checkFlags(fs *pflag.FlagSet) runFunc {
	var o checkOptions
	fs.BoolVar(&o.json, "json", false, "write the verdict as JSON")
	fs.IntVar(&o.device, "device", -1, "check only CUDA device `N`; -1 for every device")
	filterFlags(fs, &o.focus, &o.ignore)
	fs.StringVar(&o.maxPeak, "max-peak", "", "fail when peak allocated exceeds `SIZE` (e.g. 40GiB)")
	fs.StringVar(&o.maxReserved, "max-reserved", "", "fail when peak reserved exceeds `SIZE`")
	fs.StringVar(&o.maxLeak, "max-leak", "", "fail when a leak grows by more than `SIZE` per step (0: any leak fails)")
	fs.Float64Var(&o.maxFrag, "max-frag", -1, "fail when more than `FRACTION` (0–1) of reserved memory is free at the peak")
	fs.BoolVar(&o.allowOOM, "allow-oom", false, "do not fail on a recorded out-of-memory event")
	memoryFlag(fs)
	return func(cc *cmdContext, paths []string) error {
		limits := map[string]int64{}
		for name, v := range map[string]string{"--max-peak": o.maxPeak, "--max-reserved": o.maxReserved, "--max-leak": o.maxLeak} {
			if v == "" {
				continue
			}
			n, err := units.ParseBytes(v)
			if err != nil {
				return usageErrorf("%s: %v", name, err)
			}
			limits[name] = n
		}
		if len(limits) == 0 && o.maxFrag < 0 && o.allowOOM {
			return usageErrorf("nothing to check: --allow-oom and no limit given; set --max-peak, --max-reserved, --max-leak or --max-frag")
		}
		var snaps []string
		for _, p := range paths {
			ps, err := checkInputs(p)
			if err != nil {
				return err
			}
			snaps = append(snaps, ps...)
		}
		var broken []string
		type verdict struct {
			Source string   `json:"source"`
			Broken []string `json:"broken"`
			// Truncated: the file was cut short and only its valid part was checked.
			Truncated bool `json:"truncated,omitempty"`
		}
		var verdicts []verdict
		var cut []string // files cut short: their lost part is unchecked
		for _, p := range snaps {
			an, err := o.analyze(cc, p)
			if err != nil {
				return err
			}
			v := verdict{Source: p, Broken: []string{}}
			for _, d := range an.Devices {
				v.Broken = append(v.Broken, checkDevice(d, limits, o.maxFrag, o.allowOOM)...)
			}
			for _, b := range v.Broken {
				broken = append(broken, p+": "+b)
			}
			if salvaged(an.Snapshot) {
				cut = append(cut, p)
				v.Truncated = true
			}
			verdicts = append(verdicts, v)
		}
		if o.json {
			if err := report.WriteJSON(cc.stdout, report.Doc{Schema: report.Schema, Kind: "check",
				Result: map[string]any{"ok": len(broken) == 0 && len(cut) == 0, "files": verdicts}}); err != nil {
				return err
			}
		} else if len(broken) == 0 && len(cut) == 0 {
			fmt.Fprintf(cc.stdout, "ok: %d snapshot(s) within every limit\n", len(snaps))
		}
		switch {
		case len(broken) > 0: // broken in the valid part: broken whatever was lost
			return checkFailedf("%s", strings.Join(broken, "; "))
		case len(cut) > 0: // the gate cannot vouch for what it could not read
			return badInput(fmt.Errorf("%s: cut short: every limit holds on the part read, but the part lost was not checked", strings.Join(cut, ", ")))
		}
		return nil
	}
}

// checkInputs resolves one argument of 'memscope check': a snapshot file,
// or a capture run directory (its snapshot, or every rank's).
func checkInputs(path string) ([]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, badInput(err)
	}
	if !st.IsDir() {
		return []string{path}, nil
	}
	if fileExists(filepath.Join(path, "results.json")) {
		return nil, usageErrorf("%s is a sweep run: check its points' snapshots (points/*/snapshot.pickle)", path)
	}
	if p := filepath.Join(path, "snapshot.pickle"); fileExists(p) {
		return []string{p}, nil
	}
	ranks, _ := filepath.Glob(filepath.Join(path, "snapshot.rank*.pickle"))
	if len(ranks) == 0 {
		return nil, badInput(fmt.Errorf("%s: a directory with no snapshot.pickle (memscope capture)", path))
	}
	sort.Strings(ranks)
	return ranks, nil
}

// checkDevice returns the limits one device breaks, each with its numbers.
func checkDevice(d *attribution.Device, limits map[string]int64, maxFrag float64, allowOOM bool) []string {
	var out []string
	t := d.Timeline
	if n := len(d.OOMs); n > 0 && !allowOOM {
		o := d.OOMs[0]
		kind := "capacity"
		if !o.Capacity {
			kind = "fragmentation"
		}
		events := "an out-of-memory event"
		if n > 1 {
			events = fmt.Sprintf("%d out-of-memory events", n)
		}
		out = append(out, fmt.Sprintf("device %d: %s recorded (the first at event %d: a %s request from %s failed, %s); --allow-oom accepts it",
			d.Device, events, o.Index, units.Bytes(o.Request), o.SiteLabel, kind))
	}
	if lim, ok := limits["--max-peak"]; ok && t.PeakAllocated.Bytes > lim {
		out = append(out, fmt.Sprintf("device %d: peak allocated %s exceeds --max-peak %s", d.Device, units.Bytes(t.PeakAllocated.Bytes), units.Bytes(lim)))
	}
	if lim, ok := limits["--max-reserved"]; ok && t.PeakReserved.Bytes > lim {
		out = append(out, fmt.Sprintf("device %d: peak reserved %s exceeds --max-reserved %s", d.Device, units.Bytes(t.PeakReserved.Bytes), units.Bytes(lim)))
	}
	if lim, ok := limits["--max-leak"]; ok && d.Leak.Found && d.Leak.GrowthPerStep > lim {
		out = append(out, fmt.Sprintf("device %d: leak of %s per step exceeds --max-leak %s (%s)", d.Device,
			units.Bytes(d.Leak.GrowthPerStep), units.Bytes(lim), d.Leak.Sites[0].Label))
	}
	if maxFrag >= 0 && len(d.Frag) > 0 && d.Frag[0].Reserved > 0 {
		f := d.Frag[0]
		if share := float64(f.Free) / float64(f.Reserved); share > maxFrag {
			out = append(out, fmt.Sprintf("device %d: %.1f%% of reserved is free at the peak, over --max-frag %.1f%%", d.Device, 100*share, 100*maxFrag))
		}
	}
	return out
}
