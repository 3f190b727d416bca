package fit

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/memscope/memscope/snapshot"
)

// Comparison is the model's request stream at a recording's batch held
// against that recording's own: what the fit predicted right, and where
// the program at that batch did something the small recordings did not
// show (other code paths, library workspaces of other sizes).
type Comparison struct {
	Path  string
	Batch int
	// Predicted and Recorded count the allocs of each stream; Matched
	// those paired (the same stack, in order), Exact those of them whose
	// predicted size is the recorded one.
	Predicted, Recorded, Matched, Exact int
	// Mispredicted are the paired requests whose size was not the
	// recorded one, by stack: Bytes the predicted sizes, RecordedBytes
	// the recorded ones; Transient says whether they are workspaces.
	Mispredicted []SizeMiss
	// PredictedOnly and RecordedOnly are the requests one stream makes
	// and the other does not, by stack (Group.Bytes: their summed sizes).
	PredictedOnly, RecordedOnly []Group
}

// SizeMiss is one stack's requests whose predicted size was not the
// recorded one.
type SizeMiss struct {
	Label                string
	Count                int
	Bytes, RecordedBytes int64
	Transient            bool
}

// Compare holds the model's stream at in's batch against in's recording
// (a run at a batch the fit did not use: the frontier's, say).
func (m *Model) Compare(in Input) (*Comparison, error) {
	if in.Batch <= 0 {
		in.Batch = BatchFromName(in.Path)
	}
	if in.Batch <= 0 {
		return nil, fmt.Errorf("%w: %s: no batch size given and none in its name", ErrRefused, in.Path)
	}
	if m.Device >= len(in.Snap.Traces) || len(in.Snap.Traces[m.Device]) == 0 {
		return nil, fmt.Errorf("%w: %s: device %d has no recorded history", ErrRefused, in.Path, m.Device)
	}
	tmpl := m.Inputs[m.Template].Snap
	tk := &stackKeys{st: tmpl.Stacks, memo: map[snapshot.StackID]string{}}
	rk := &stackKeys{st: in.Snap.Stacks, memo: map[snapshot.StackID]string{}}
	type req struct {
		key   string
		size  int64
		stack snapshot.StackID
	}
	pred := make([]req, len(m.Requests))
	for i := range m.Requests {
		r := &m.Requests[i]
		pred[i] = req{tk.key(r.Stack), r.SizeAt(in.Batch), r.Stack}
	}
	var rec []req
	for _, ev := range in.Snap.Traces[m.Device] {
		if ev.Action == snapshot.ActionAlloc {
			rec = append(rec, req{rk.key(ev.Stack), ev.Size, ev.Stack})
		}
	}
	// The same stack at the predicted size first; then, between those
	// anchors, the same stack in order (a size the fit got wrong).
	match, _, ok := align(len(pred), len(rec), func(i, j int) bool { return pred[i].key == rec[j].key && pred[i].size == rec[j].size })
	if !ok {
		match, _, ok = align(len(pred), len(rec), func(i, j int) bool { return pred[i].key == rec[j].key })
	}
	if !ok {
		return nil, fmt.Errorf("%w: %s and the template differ in more than %d requests: not one program", ErrRefused, in.Path, maxEdits)
	}
	pairGaps(match, len(rec), func(i, j int) bool { return pred[i].key == rec[j].key })
	c := &Comparison{Path: in.Path, Batch: in.Batch, Predicted: len(pred), Recorded: len(rec)}
	miss := map[string]*SizeMiss{}
	only := map[string]*Group{}
	seen := make([]bool, len(rec))
	add := func(into map[string]*Group, label string, bytes int64) {
		g := into[label]
		if g == nil {
			g = &Group{Label: label}
			into[label] = g
		}
		g.Count++
		g.Bytes += bytes
	}
	for i, j := range match {
		label := StackLabel(tmpl.Stacks, pred[i].stack)
		if j < 0 {
			add(only, label, pred[i].size)
			continue
		}
		seen[j] = true
		c.Matched++
		if pred[i].size == rec[j].size {
			c.Exact++
			continue
		}
		s := miss[label]
		if s == nil {
			s = &SizeMiss{Label: label, Transient: true}
			miss[label] = s
		}
		s.Count++
		s.Bytes += pred[i].size
		s.RecordedBytes += rec[j].size
		s.Transient = s.Transient && m.Requests[i].Transient
	}
	for _, s := range miss {
		c.Mispredicted = append(c.Mispredicted, *s)
	}
	for _, g := range only {
		c.PredictedOnly = append(c.PredictedOnly, *g)
	}
	ronly := map[string]*Group{}
	for j, r := range rec {
		if !seen[j] {
			add(ronly, StackLabel(in.Snap.Stacks, r.stack), r.size)
		}
	}
	for _, g := range ronly {
		c.RecordedOnly = append(c.RecordedOnly, *g)
	}
	slices.SortFunc(c.Mispredicted, func(a, b SizeMiss) int {
		return cmpDesc(a.Count, b.Count, a.Label, b.Label)
	})
	for _, gs := range [][]Group{c.PredictedOnly, c.RecordedOnly} {
		slices.SortFunc(gs, func(a, b Group) int { return cmpDesc(a.Count, b.Count, a.Label, b.Label) })
	}
	return c, nil
}

// cmpDesc orders by count, most first, then by label.
func cmpDesc(a, b int, la, lb string) int {
	if a != b {
		return b - a
	}
	return strings.Compare(la, lb)
}

// pairGaps pairs, between consecutive matches, the unmatched requests of
// the two streams that eq says are alike, in order.
func pairGaps(match []int32, m int, eq func(i, j int) bool) {
	lastJ := int32(-1)
	i := 0
	for i < len(match) {
		if match[i] >= 0 {
			lastJ = match[i]
			i++
			continue
		}
		end := i // the gap [i, end) in the first stream
		for end < len(match) && match[end] < 0 {
			end++
		}
		nextJ := int32(m) // and (lastJ, nextJ) in the second
		if end < len(match) {
			nextJ = match[end]
		}
		j := lastJ + 1
		for k := i; k < end && j < nextJ; k++ {
			for jj := j; jj < nextJ; jj++ {
				if eq(k, int(jj)) {
					match[k], j = jj, jj+1
					break
				}
			}
		}
		i = end
	}
}

// ParseCompare reads --compare SNAP or SNAP@N: the recording and its
// batch (0: from its name).
func ParseCompare(s string) (path string, batch int, err error) {
	if i := strings.LastIndexByte(s, '@'); i > 0 {
		if n, err := strconv.Atoi(s[i+1:]); err == nil {
			if n < 1 {
				return "", 0, fmt.Errorf("--compare %q: the batch after @ is 1 or more", s)
			}
			return s[:i], n, nil
		}
	}
	return s, 0, nil
}
