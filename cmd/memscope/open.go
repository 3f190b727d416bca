package main

import (
	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/capture"
	"github.com/memscope/memscope/internal/flagvalue"
	"github.com/memscope/memscope/internal/memlimit"
	"github.com/memscope/memscope/snapshot"
	"github.com/memscope/memscope/trace"
	"github.com/spf13/pflag"
)

// memoryFlag defines --max-memory, which every command that reads
// snapshots or traces takes; runCommand reads it into cmdContext.maxMemory.
func memoryFlag(fs *pflag.FlagSet) {
	flagvalue.Size(fs, new(int64), "max-memory", true, "8GiB", "let decoding, and the whole process, use up to `SIZE` (e.g. 8GiB) instead of a limit proportional to each file's size (a pipe's: to what was read)")
}

// memoryFlagOf is fs's --max-memory in bytes, 0 when not given.
func memoryFlagOf(fs *pflag.FlagSet) int64 { return flagvalue.SizeOf(fs, "max-memory") }

// openProfile reads a torch.profiler trace or memory timeline for a
// command, within --max-memory.
func openProfile(cc *cmdContext, path string) (trace.Profile, error) {
	memlimit.Add(cc.maxMemory, path, memlimit.Trace)
	p, err := trace.OpenProfileWith(path, cc.maxMemory)
	if cc.neutral != nil && p.Trace != nil {
		p.Trace.RewritePyFiles(cc.neutral.Files(p.Trace.PyFiles()))
	}
	return p, err
}

// shown is an input's path as outputs name it: with --neutral-paths, its
// neutral form (srcpath.Neutral: <home>/runs/a.pickle).
func (cc *cmdContext) shown(path string) string {
	if cc.neutral == nil {
		return path
	}
	return cc.neutral.Path(path)
}

// neutralize rewrites a snapshot's frame files and its Source to neutral
// prefixes with --neutral-paths (srcpath.Neutral.Files: the recording's
// files read together), before anything is analysed.
func (cc *cmdContext) neutralize(s *snapshot.Snapshot) {
	if cc.neutral == nil || s == nil {
		return
	}
	s.Stacks.RewriteFiles(cc.neutral.Files(s.Stacks.Files()))
	s.Source = cc.neutral.Path(s.Source)
}

// openSnapshot opens the snapshot at path for a command. A file cut short
// (a dump written as the process died) is not an error here: the valid
// part is returned, and a warning on stderr says where the file ended and
// what was lost; every analysis command then reports on that part. Other
// errors are the input's fault.
func openSnapshot(cc *cmdContext, path string) (*snapshot.Snapshot, error) {
	memlimit.Add(cc.maxMemory, path, memlimit.Snapshot)
	s, err := snapshot.OpenWith(path, snapshot.Options{MaxMemory: cc.maxMemory})
	// What only decoding needed (the unpickler's memo: a fifth of a big
	// snapshot) is garbage now; collecting it here lets the analysis reuse
	// that memory instead of growing the process. The decoded entries hold
	// no pointers, so this costs little.
	memlimit.Collect()
	if err != nil {
		if s == nil {
			return nil, badInput(err)
		}
		cc.warnf("%s", snapshot.SalvageNote(cc.shown(path), s, err))
	}
	cc.neutralize(s)
	return s, nil
}

// openSnapshots opens the snapshots at paths as openSnapshot does, as
// many at a time as there are cores (snapshot.OpenAll). Warnings come in
// the order of paths; the first error, in that order, is returned.
func openSnapshots(cc *cmdContext, paths []string) ([]*snapshot.Snapshot, error) {
	for _, p := range paths {
		memlimit.Add(cc.maxMemory, p, memlimit.Snapshot)
	}
	snaps, errs := snapshot.OpenAll(paths, snapshot.Options{MaxMemory: cc.maxMemory})
	memlimit.Collect()
	for i, err := range errs {
		if err == nil {
			continue
		}
		if snaps[i] == nil {
			return nil, badInput(err)
		}
		cc.warnf("%s", snapshot.SalvageNote(cc.shown(paths[i]), snaps[i], err))
	}
	for _, s := range snaps {
		cc.neutralize(s)
	}
	return snaps, nil
}

// analyzeSnapshot opens and analyses the snapshot at path. A --device
// the snapshot does not have is an error naming those it has; a --focus
// that matches none of its frames is a warning, since every site then
// falls back to its innermost Python frame.
func analyzeSnapshot(cc *cmdContext, path string, opt attribution.Options) (*attribution.Analysis, error) {
	s, err := openSnapshot(cc, path)
	if err != nil {
		return nil, err
	}
	if err := checkAgainst(cc, path, s, opt); err != nil {
		return nil, err
	}
	return attribution.Analyze(s, opt), nil
}

// checkAgainst holds the analysis options against the snapshot: see
// analyzeSnapshot.
func checkAgainst(cc *cmdContext, path string, s *snapshot.Snapshot, opt attribution.Options) error {
	if err := checkDevice(s, opt.Device); err != nil {
		return err
	}
	if opt.Filter != nil && !opt.Filter.FocusMatches(s.Stacks) {
		cc.warnf("%s: --focus %q matches no frame of user or library code; every site falls back to its innermost Python frame", path, opt.Filter.Focus)
	}
	return nil
}

// checkDevice is snapshot.CheckDevice, the input's fault when it fails.
func checkDevice(s *snapshot.Snapshot, device int) error { return badInput(s.CheckDevice(device)) }

// filteredPaths is the --ignore/--focus filter and the snapshot paths of a
// command that renders many snapshots (report, serve).
func filteredPaths(ignore, focus string, args []string) (*attribution.Filter, []string, error) {
	filter, err := attribution.NewFilter(ignore, focus)
	if err != nil {
		return nil, nil, usageErrorf("%v", err)
	}
	paths, err := snapshotPaths(args)
	return filter, paths, err
}

// snapshotPaths expands the arguments of a command that reads snapshots
// (capture.SnapshotPaths: a capture run directory stands for its
// snapshots).
func snapshotPaths(args []string) ([]string, error) {
	paths, err := capture.SnapshotPaths(args)
	return paths, badInput(err)
}
