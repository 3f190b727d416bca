package fit

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/memscope/memscope/allocator"
	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/snapshot"
)

// Input is one recording of the job and the batch it ran at (0: read it
// from the file's name, else refused).
type Input struct {
	Path  string
	Snap  *snapshot.Snapshot
	Batch int
}

// Request is one alloc of the template recording and its size as a
// function of the batch: Fixed + PerSample·N (+ Quad·N² where Kind says
// so). Sizes are the recordings' requested bytes.
type Request struct {
	Index     int // event index in the template's trace
	Stack     snapshot.StackID
	Fixed     int64
	PerSample int64
	Quad      int64
	Kind      SizeKind
	Sizes     []int64 // by input (0: not paired in that input)
	// Transient is a request freed before the next one is made: a
	// library's workspace (cuDNN's convolutions try one and fall back to
	// an algorithm that needs less when it fails).
	Transient bool
}

// SizeKind says how a request's size follows the batch.
type SizeKind uint8

const (
	SizeConstant  SizeKind = iota // the same at every recorded batch
	SizeLinear                    // Fixed + PerSample·N, exactly, at every recorded batch
	SizeQuadratic                 // Fixed + PerSample·N + Quad·N², exactly (three or more recordings)
	SizeIrregular                 // no exact line: extrapolated from the two largest batches
	SizeUnpaired                  // in the template only: kept at its recorded size
)

var sizeKindNames = [...]string{"constant", "linear", "quadratic", "irregular", "unpaired"}

func (k SizeKind) String() string { return sizeKindNames[k] }

// Group sums the requests of one stack that share a kind: what the
// output names (irregular and unpaired requests, the largest scaling
// ones).
type Group struct {
	Stack     snapshot.StackID
	Label     string // the stack's innermost user frame
	Kind      SizeKind
	Count     int
	Bytes     int64 // summed recorded sizes in the template
	PerSample int64 // summed per-sample bytes (linear kinds)
}

// Model is the job's request stream as a function of the batch: the
// template (the recording at the largest batch) with each alloc's size
// fitted across the recordings, driven through the allocator model.
type Model struct {
	Inputs   []Input
	Template int // index into Inputs
	Device   int
	Requests []Request
	// Counts by kind, and the requests of the other recordings that the
	// template has no counterpart for (by input).
	Kinds       [5]int
	OnlyOthers  []int
	Irregular   []Group
	Unpaired    []Group
	Scaling     []Group // the stacks whose requests grow most per sample
	LateStart   bool    // the template began late: its start state is taken as batch-independent
	StartBytes  int64   // live bytes at the template's first entry
	Warnings    []string
	rc          *allocator.Recording
	phases      *attribution.Phases // set when phasesReady is closed
	dev         *attribution.Device // the template's device analysed, set with phases
	phasesReady chan struct{}
	recordedSet allocator.Settings
}

// ErrRefused is a fit the inputs do not allow (FitError says why).
var ErrRefused = errors.New("cannot fit")

var batchInName = regexp.MustCompile(`(?i)(?:^|[^a-z])(?:b|bs|batch)[_-]?(\d+)(?:[^0-9]|$)`)

// BatchFromName reads a batch size from a file or directory name such as
// "b8/snapshot.pickle", "bs16.pickle" or "run_batch-32.pickle"; 0 when
// none (or two different ones) is there.
func BatchFromName(path string) int {
	found := 0
	for _, part := range strings.Split(strings.ReplaceAll(path, "\\", "/"), "/") {
		for _, m := range batchInName.FindAllStringSubmatch(part, -1) {
			n, err := strconv.Atoi(m[1])
			if err != nil || n <= 0 {
				continue
			}
			if found != 0 && found != n {
				return 0
			}
			found = n
		}
	}
	return found
}

// Options tune New.
type Options struct {
	// DeviceTotal and MemoryFraction describe the cap the what-ifs run
	// under (as allocator.WhatIfOptions); MemoryLimit is a cap in bytes.
	DeviceTotal    int64
	MemoryFraction float64
	MemoryLimit    int64
}

// New pairs the recordings' requests (the same stack, the same
// occurrence of it) and fits each one's size to the batch.
func New(inputs []Input, device int, opt Options) (*Model, error) {
	refuse := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrRefused, fmt.Sprintf(format, args...))
	}
	if len(inputs) < 2 {
		return nil, refuse("fit needs two or more recordings of the job at different batch sizes, got %d", len(inputs))
	}
	seen := map[int]string{}
	t := 0
	for i := range inputs {
		in := &inputs[i]
		if in.Batch <= 0 {
			in.Batch = BatchFromName(in.Path)
		}
		if in.Batch <= 0 {
			return nil, refuse("%s: no batch size given and none in its name (b8, bs8, batch8): pass --batches%s", in.Path, ratioHint(inputs, device))
		}
		if p, dup := seen[in.Batch]; dup {
			return nil, refuse("%s and %s were both recorded at batch %d: fit needs different batch sizes", p, in.Path, in.Batch)
		}
		seen[in.Batch] = in.Path
		if device >= len(in.Snap.Traces) || len(in.Snap.Traces[device]) == 0 {
			return nil, refuse("%s: device %d has no recorded history (record with torch.cuda.memory._record_memory_history)", in.Path, device)
		}
		if in.Batch > inputs[t].Batch {
			t = i
		}
	}
	m := &Model{Inputs: inputs, Template: t, Device: device, OnlyOthers: make([]int, len(inputs))}
	if err := m.pair(); err != nil {
		return nil, err
	}
	tmpl := inputs[t]
	for _, ev := range tmpl.Snap.Traces[device] {
		if ev.Action == snapshot.ActionOOM {
			return nil, refuse("%s ran out of memory at batch %d: fit needs recordings that ran to the end", tmpl.Path, tmpl.Batch)
		}
	}
	// One replay of the template serves the what-ifs and the start-state
	// check below.
	tl := snapshot.Replay(tmpl.Snap, device, snapshot.ReplayOptions{})
	rc, err := allocator.NewRecording(tmpl.Snap, device, allocator.WhatIfOptions{DeviceTotal: opt.DeviceTotal, MemoryFraction: opt.MemoryFraction, MemoryLimit: opt.MemoryLimit, Timeline: tl})
	if err != nil {
		return nil, refuse("%s: %v", tmpl.Path, err)
	}
	m.rc = rc
	set, err := allocator.SettingsFromSnapshot(tmpl.Snap.Settings)
	if err != nil {
		return nil, refuse("%s: %v", tmpl.Path, err)
	}
	m.recordedSet = set
	// The steps and phases name where a run dies; the analysis that finds
	// them runs beside the bisection (phasesOf waits for it).
	m.phasesReady = make(chan struct{})
	go func() {
		defer close(m.phasesReady)
		a := attribution.Analyze(tmpl.Snap, attribution.Options{Device: device})
		for _, d := range a.Devices {
			if d.Device == device {
				m.phases, m.dev = d.Phases, d
			}
		}
	}()
	if _, live, ranges := tl.StartState(); len(live) > 0 || len(ranges) > 0 {
		m.LateStart = true
		for _, b := range live {
			m.StartBytes += b.Size
		}
		m.Warnings = append(m.Warnings, fmt.Sprintf("%s began recording late: the %d bytes live at its first entry are taken as the same at every size", tmpl.Path, m.StartBytes))
	}
	return m, nil
}

// stackKeys gives each stack of s a key comparable across snapshots: its
// frames' names, files and lines.
type stackKeys struct {
	st   *snapshot.Stacks
	memo map[snapshot.StackID]string
}

func (k *stackKeys) key(id snapshot.StackID) string {
	if v, ok := k.memo[id]; ok {
		return v
	}
	var b strings.Builder
	if k.st != nil {
		for _, f := range k.st.Stack(id) {
			fr := k.st.Frame(f)
			b.WriteString(fr.Filename)
			b.WriteByte(':')
			b.WriteString(strconv.FormatInt(fr.Line, 10))
			b.WriteByte(':')
			b.WriteString(fr.Name)
			b.WriteByte('\n')
		}
	}
	v := b.String()
	k.memo[id] = v
	return v
}

// pair finds each template alloc's counterpart in every other recording
// and fits its size. Two recordings of one program at two batches mostly
// make the same requests in the same order, but not always (batch 1
// takes other code paths; cuDNN picks other algorithms and workspaces):
// the streams are aligned as a diff (align), a request matching one of
// the same stack whose size is possible for it at that batch (no larger
// at a smaller batch, and no smaller than in proportion).
func (m *Model) pair() error {
	t := m.Template
	ids := map[string]int32{}
	type req struct {
		key  int32
		size int64
	}
	stream := func(in Input) []req {
		keys := &stackKeys{st: in.Snap.Stacks, memo: map[snapshot.StackID]string{}}
		byStack := map[snapshot.StackID]int32{} // the stack's key's id, once per stack
		evs := in.Snap.Traces[m.Device]
		n := 0
		for i := range evs {
			if evs[i].Action == snapshot.ActionAlloc {
				n++
			}
		}
		out := make([]req, 0, n)
		for i := range evs {
			ev := &evs[i]
			if ev.Action != snapshot.ActionAlloc {
				continue
			}
			id, ok := byStack[ev.Stack]
			if !ok {
				k := keys.key(ev.Stack)
				if id, ok = ids[k]; !ok {
					id = int32(len(ids))
					ids[k] = id
				}
				byStack[ev.Stack] = id
			}
			out = append(out, req{id, ev.Size})
		}
		return out
	}
	tr := stream(m.Inputs[t])
	nt := int64(m.Inputs[t].Batch)
	matches := make([][]int32, len(m.Inputs))
	others := make([][]req, len(m.Inputs))
	for k, in := range m.Inputs {
		if k == t {
			continue
		}
		o := stream(in)
		no := int64(in.Batch)
		match, edits, ok := align(len(tr), len(o), func(i, j int) bool {
			a, b := tr[i], o[j]
			if a.key != b.key {
				return false
			}
			// b at batch no, a at nt > no: b ≤ a and b/a ≥ no/nt.
			return b.size <= a.size && b.size*nt >= a.size*no
		})
		if !ok {
			return fmt.Errorf("%w: %s and %s differ in more than %d requests: they are not recordings of one program at two batches", ErrRefused, in.Path, m.Inputs[t].Path, maxEdits)
		}
		if edits > 0 {
			m.Warnings = append(m.Warnings, fmt.Sprintf("%s (at %d) and %s (at %d) differ in %d requests, made by one and not the other: they are left out of the fit", in.Path, in.Batch, m.Inputs[t].Path, m.Inputs[t].Batch, edits))
		}
		matches[k], others[k] = match, o
	}
	evs := m.Inputs[t].Snap.Traces[m.Device]
	j := 0
	paired := make([]int, len(m.Inputs))
	m.Requests = make([]Request, 0, len(tr))
	sizes := make([]int64, len(tr)*len(m.Inputs)) // the requests' Sizes, one backing array
	for i := range evs {
		ev := &evs[i]
		if ev.Action != snapshot.ActionAlloc {
			continue
		}
		r := Request{Index: i, Stack: ev.Stack, Sizes: sizes[j*len(m.Inputs) : (j+1)*len(m.Inputs) : (j+1)*len(m.Inputs)]}
		r.Sizes[t] = ev.Size
		n := 1
		for k := range m.Inputs {
			if k == t {
				continue
			}
			if o := matches[k][j]; o >= 0 {
				r.Sizes[k] = others[k][o].size
				paired[k]++
				n++
			}
		}
		j++
		r.Transient = transient(evs, i)
		m.fitSize(&r, n)
		m.Kinds[r.Kind]++
		m.Requests = append(m.Requests, r)
	}
	for k := range m.Inputs {
		if k != t {
			m.OnlyOthers[k] = len(others[k]) - paired[k]
		}
	}
	m.group()
	return nil
}

// transient reports whether the alloc at i is freed before any other
// request is made.
func transient(evs []snapshot.Event, i int) bool {
	addr := evs[i].Addr
	for k := i + 1; k < len(evs); k++ {
		switch evs[k].Action {
		case snapshot.ActionAlloc, snapshot.ActionOOM:
			return false
		case snapshot.ActionFreeRequested:
			if evs[k].Addr == addr {
				return true
			}
		}
	}
	return false
}

// fitSize fits r's size to the batch from the n recordings it is paired
// in: exactly a line, or with three or more points a parabola; else the
// line through the two largest batches (irregular).
func (m *Model) fitSize(r *Request, n int) {
	t := m.Template
	if n < 2 {
		r.Kind, r.Fixed = SizeUnpaired, r.Sizes[t]
		return
	}
	type pt struct{ n, s int64 }
	var pts []pt
	for k, in := range m.Inputs {
		if r.Sizes[k] > 0 || k == t {
			pts = append(pts, pt{int64(in.Batch), r.Sizes[k]})
		}
	}
	slices.SortFunc(pts, func(a, b pt) int { return int(b.n - a.n) }) // largest batch first
	p0, p1 := pts[0], pts[1]
	if (p0.s-p1.s)%(p0.n-p1.n) == 0 {
		b := (p0.s - p1.s) / (p0.n - p1.n)
		a := p0.s - b*p0.n
		exact := true
		for _, p := range pts[2:] {
			if a+b*p.n != p.s {
				exact = false
			}
		}
		if exact {
			r.Fixed, r.PerSample = a, b
			r.Kind = SizeLinear
			if b == 0 {
				r.Kind = SizeConstant
			}
			return
		}
	}
	if len(pts) >= 3 {
		// s = a + b·n + c·n² through the three largest batches, exactly.
		x0, x1, x2 := pts[0].n, pts[1].n, pts[2].n
		y0, y1, y2 := pts[0].s, pts[1].s, pts[2].s
		// divided differences
		d01n, d01d := y0-y1, x0-x1
		d12n, d12d := y1-y2, x1-x2
		// c = (d01 - d12)/(x0 - x2), with d01 = d01n/d01d and d12 = d12n/d12d
		num := d01n*d12d - d12n*d01d
		den := d01d * d12d * (x0 - x2)
		if den != 0 && num%den == 0 {
			c := num / den
			// b = d01 - c(x0 + x1)
			if d01n%d01d == 0 {
				b := d01n/d01d - c*(x0+x1)
				a := y0 - b*x0 - c*x0*x0
				exact := true
				for _, p := range pts {
					if a+b*p.n+c*p.n*p.n != p.s {
						exact = false
					}
				}
				if exact {
					r.Fixed, r.PerSample, r.Quad, r.Kind = a, b, c, SizeQuadratic
					return
				}
			}
		}
	}
	// The line through the two largest batches, rounded down to the grain.
	r.Kind = SizeIrregular
	r.PerSample = (p0.s - p1.s) / (p0.n - p1.n)
	r.Fixed = p0.s - r.PerSample*p0.n
}

// SizeAt is r's size at batch n (at least 1 byte).
func (r *Request) SizeAt(n int) int64 {
	x := int64(n)
	s := r.Fixed + r.PerSample*x + r.Quad*x*x
	return max(s, 1)
}

// Sizes is the template's alloc sizes at batch n, by event index (0 for
// entries that are not allocs), for allocator.Recording.WhatIfSized.
func (m *Model) Sizes(n int, into []int64) []int64 {
	evs := m.Inputs[m.Template].Snap.Traces[m.Device]
	if cap(into) < len(evs) {
		into = make([]int64, len(evs))
	}
	into = into[:len(evs)]
	clear(into)
	for i := range m.Requests {
		r := &m.Requests[i]
		into[r.Index] = r.SizeAt(n)
		if r.Transient && survivable(r) {
			into[r.Index] = -into[r.Index]
		}
	}
	return into
}

// survivable reports whether the model lets r fail and the run go on.
// A transient request is a library's workspace: cuDNN's convolutions
// catch the allocator's OOM and fall back to an algorithm that needs
// less (torch counts each in num_ooms and the step completes; on
// fixtures/fit-conv the run at batch 94 under an 8 GiB cap survived six).
func survivable(r *Request) bool { return r.Transient }

// group sums requests by stack and kind for the output.
func (m *Model) group() {
	st := m.Inputs[m.Template].Snap.Stacks
	type gk struct {
		stack snapshot.StackID
		kind  SizeKind
	}
	groups := map[gk]*Group{}
	var order []gk
	for i := range m.Requests {
		r := &m.Requests[i]
		k := gk{r.Stack, r.Kind}
		g := groups[k]
		if g == nil {
			g = &Group{Stack: r.Stack, Label: StackLabel(st, r.Stack), Kind: r.Kind}
			groups[k] = g
			order = append(order, k)
		}
		g.Count++
		g.Bytes += r.Sizes[m.Template]
		if r.Kind == SizeLinear || r.Kind == SizeQuadratic || r.Kind == SizeIrregular {
			g.PerSample += r.PerSample
		}
	}
	byLabel := map[string]int{} // scaling groups of one label, merged
	for _, k := range order {
		g := *groups[k]
		if g.Kind == SizeLinear || g.Kind == SizeQuadratic {
			if j, ok := byLabel[g.Label]; ok {
				m.Scaling[j].Count += g.Count
				m.Scaling[j].Bytes += g.Bytes
				m.Scaling[j].PerSample += g.PerSample
				continue
			}
			byLabel[g.Label] = len(m.Scaling)
		}
		switch g.Kind {
		case SizeIrregular:
			m.Irregular = append(m.Irregular, g)
		case SizeUnpaired:
			m.Unpaired = append(m.Unpaired, g)
		case SizeLinear, SizeQuadratic:
			m.Scaling = append(m.Scaling, g)
		}
	}
	bySize := func(a, b Group) int {
		if a.Bytes != b.Bytes {
			if a.Bytes > b.Bytes {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Label, b.Label)
	}
	slices.SortStableFunc(m.Irregular, bySize)
	slices.SortStableFunc(m.Unpaired, bySize)
	slices.SortStableFunc(m.Scaling, func(a, b Group) int {
		if a.PerSample != b.PerSample {
			if a.PerSample > b.PerSample {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Label, b.Label)
	})
}

// StackLabel names a stack by its innermost frame outside torch and the
// standard library, else its innermost frame.
func StackLabel(st *snapshot.Stacks, id snapshot.StackID) string {
	if st == nil {
		return "(no stack)"
	}
	frames := st.Stack(id)
	if len(frames) == 0 {
		return "(no Python frame)"
	}
	pick := st.Frame(frames[0])
	for _, f := range frames {
		fr := st.Frame(f)
		if fr.Line <= 0 || strings.Contains(fr.Filename, "/torch/") || strings.HasPrefix(fr.Filename, "<") && !strings.HasPrefix(fr.Filename, "<repo>") {
			continue
		}
		pick = fr
		break
	}
	file := pick.Filename
	if i := strings.LastIndexByte(file, '/'); i >= 0 {
		file = file[i+1:]
	}
	return fmt.Sprintf("%s:%d %s", file, pick.Line, pick.Name)
}

// ratioHint reads how the recordings' batches relate from their
// requests, for the refusal that asks for them: the requests that grow in
// proportion to the batch (the batch's own tensors) have sizes in the
// ratio of the batches, so the ratio most of the differing pairs share is
// theirs. "" when it cannot be read.
func ratioHint(inputs []Input, device int) string {
	if len(inputs) < 2 {
		return ""
	}
	keyed := func(in Input) (keys []string, sizes []int64) {
		if device >= len(in.Snap.Traces) {
			return nil, nil
		}
		k := &stackKeys{st: in.Snap.Stacks, memo: map[snapshot.StackID]string{}}
		for _, ev := range in.Snap.Traces[device] {
			if ev.Action == snapshot.ActionAlloc {
				keys, sizes = append(keys, k.key(ev.Stack)), append(sizes, ev.Size)
			}
		}
		return keys, sizes
	}
	k0, s0 := keyed(inputs[0])
	var ratios [][2]int64 // input k's batch over input 0's, as num/den in lowest terms
	for _, in := range inputs[1:] {
		k1, s1 := keyed(in)
		match, _, ok := align(len(k0), len(k1), func(i, j int) bool { return k0[i] == k1[j] })
		if !ok {
			return ""
		}
		votes := map[[2]int64]int{}
		for i, j := range match {
			if j < 0 || s0[i] == s1[j] || s0[i] <= 0 || s1[j] <= 0 {
				continue
			}
			g := gcd(s0[i], s1[j])
			if a, b := s0[i]/g, s1[j]/g; a <= 64 && b <= 64 {
				votes[[2]int64{b, a}]++
			}
		}
		best, n := [2]int64{}, 0
		for r, v := range votes {
			if v > n || v == n && r[0]+r[1] < best[0]+best[1] {
				best, n = r, v
			}
		}
		if n == 0 {
			return ""
		}
		ratios = append(ratios, best)
	}
	// The smallest whole batches in those ratios: input 0 at the least
	// common multiple of the denominators.
	base := int64(1)
	for _, r := range ratios {
		base = base / gcd(base, r[1]) * r[1]
	}
	batches := []int64{base}
	for _, r := range ratios {
		batches = append(batches, base/r[1]*r[0])
	}
	g := batches[0]
	for _, b := range batches {
		g = gcd(g, b)
	}
	var parts, twice []string
	for _, b := range batches {
		parts = append(parts, strconv.FormatInt(b/g, 10))
		twice = append(twice, strconv.FormatInt(2*b/g, 10))
	}
	return fmt.Sprintf(" (their per-sample requests scale as %s, in the files' order: --batches %s, or a multiple of it: %s, …)", strings.Join(parts, " : "), strings.Join(parts, ","), strings.Join(twice, ","))
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
