package attribution

import (
	"fmt"

	"github.com/memscope/memscope/snapshot"
)

// OOM is the post-mortem of one out-of-memory event.
type OOM struct {
	N      int // 1 for the device's first OOM
	Index  int // the oom event
	TimeUS int64
	// Request is the allocation that failed (rounded, as torch records
	// it); DeviceFree what the driver reported free on the whole device at
	// that moment; AllocSize the segment the allocator needed for it.
	Request, DeviceFree, AllocSize int64
	// Stack is where the failing request was made (the oom entry's
	// frames), Site its site, named as the sites of live blocks are.
	Stack     snapshot.StackID
	Site      Site
	SiteLabel string
	// Step and Phase are where the request was made (Step -1 outside
	// steps; Phase "" when the trace has no phases).
	Step  int
	Phase string
	Numbers
	// At is what was live, by site and category; Frag the free memory,
	// with the headroom and the stranded bytes the verdict weighs.
	At   *Moment
	Frag *Fragmentation
	// Cap is the per-process limit the allocator enforced
	// (torch.cuda.set_per_process_memory_fraction) when the device had
	// room for the segment but the allocator refused it; nil when the
	// device itself was full.
	Cap *Cap
	// Verdict says whether the request failed for capacity or for
	// fragmentation, and what to change.
	Verdict OOMVerdict
	// Needs is what the failed step would still have had to allocate
	// when that can be told, nil otherwise: at an Adam-family optimizer's
	// first step, the rest of its two moments per parameter.
	Needs *StepNeeds
}

// StepNeeds is what an OOM'd step would still have allocated: More bytes
// beyond what was live at the OOM (the request among them), and the
// allocated peak it would have reached, at least, Peak.
type StepNeeds struct {
	More, Peak int64
	// Optimizer names the optimizer class whose state was being made;
	// Params and State are the parameter and optimizer-state bytes live
	// at the OOM, from which More follows (2 × Params − State).
	Optimizer     string
	Params, State int64
}

// Cap brackets a per-process memory limit that no snapshot records: the
// allocator reserved Low at some moment (so the limit is at least that),
// and refused to grow from the reserved memory at the OOM by the segment
// the request needed (so it is below High).
type Cap struct {
	Low, High int64
}

// allocSize mirrors the caching allocator's get_allocation_size for a
// rounded request: the segment cudaMalloc is asked for (or, with
// expandable segments, the pages mapped).
func allocSize(size int64, expandable bool) int64 {
	const small, large, minLarge, roundLarge = 2 << 20, 20 << 20, 10 << 20, 2 << 20
	up := func(n, m int64) int64 { return (n + m - 1) / m * m }
	switch {
	case expandable && size <= smallRequest:
		return up(size, small)
	case expandable:
		return up(size, large)
	case size <= smallRequest:
		return small
	case size < minLarge:
		return large
	}
	return up(size, roundLarge)
}

func (d *Device) oom(index, k int) *OOM {
	ev := &d.Timeline.Events[index]
	st := d.an.Snapshot.Stacks
	m := d.At(index, fmt.Sprintf("oom %d", k+1))
	expandable, _ := d.an.Snapshot.Settings["expandable_segments"].(bool)
	o := &OOM{N: k + 1, Index: index, TimeUS: ev.TimeUS, Request: ev.Size,
		DeviceFree: ev.DeviceFree(), AllocSize: allocSize(ev.Size, expandable),
		Stack: ev.Stack, Site: d.an.Filter.SiteOf(st, ev.Stack), Numbers: m.Numbers, At: m}
	o.SiteLabel = o.Site.Label(st)
	o.Step = -1
	if name, pi := d.class.phaseName(index); pi >= 0 {
		o.Step, o.Phase = d.Phases.List[pi].Step, name
	}
	headroom := o.DeviceFree
	if o.DeviceFree >= o.AllocSize {
		// The device had room for the segment: a limit of the process's
		// refused it. The most reserved up to now is within the limit.
		c := &Cap{Low: max(d.reservedBefore[index], o.Reserved), High: o.Reserved + o.AllocSize}
		if c.Low < c.High {
			o.Cap = c
			headroom = c.Low - o.Reserved
		} else {
			headroom = 0
		}
	}
	o.Frag = d.fragmentation(m)
	o.Frag.unusableFor(d, m, ev.Size, headroom)
	o.Verdict = o.verdict()
	o.Needs = d.stepNeeds(o)
	return o
}

// stepNeeds tells what the step an OOM cut short still had to allocate,
// where the recording says: an OOM inside an Adam-family optimizer's step
// (Optimizer.step#AdamW.step) with no optimizer state before that step (its
// first: the moments are made lazily) still had to make two moments of
// each parameter's size, less those made.
func (d *Device) stepNeeds(o *OOM) *StepNeeds {
	c := d.class
	if o.Phase != "optimizer" || !adamFamily(c.optClass) || !inRange(c.steps, o.TimeUS) {
		return nil
	}
	for _, ph := range d.Phases.List {
		if ph.Name == "optimizer" && ph.Step < o.Step {
			return nil // an earlier step made the state
		}
	}
	params, state := o.At.Categories[Parameter].Bytes, o.At.Categories[OptimizerState].Bytes
	more := 2*params - state
	if more <= 0 {
		return nil
	}
	return &StepNeeds{More: more, Peak: o.Allocated + more, Optimizer: c.optClass, Params: params, State: state}
}

// verdict decides what failed and what to change.
func (o *OOM) verdict() OOMVerdict {
	f := o.Frag
	v := OOMVerdict{Kind: OOMCapacity, Severity: SeverityProblem, Request: o.Request,
		Allocated: o.Allocated, Free: o.Reserved - o.Active, Stranded: f.Stranded, Headroom: f.Headroom,
		DeviceFree: o.DeviceFree, AllocSize: o.AllocSize, Cap: o.Cap}
	v.Pool, v.Largest = f.pool()
	if f.fragmented() {
		v.Kind = OOMFragmentation
		v.Try = []Suggestion{{ExpandableSegments, "True"}, {Setting: MaxSplitSize}}
	}
	return v
}
