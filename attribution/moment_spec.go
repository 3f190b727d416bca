package attribution

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/memscope/memscope/internal/units"
)

// Moment resolves a moment spec as ParseMoment does, refusing what would
// otherwise be answered with something else: a step:N:PHASE of a step the
// device does not have is an error listing the steps it has, and a time
// past the recording's end one naming the recording's length (ParseMoment
// alone answers the last event).
func (d *Device) Moment(spec string) (*Moment, error) {
	if err := d.checkMoment(spec); err != nil {
		return nil, err
	}
	return d.ParseMoment(spec)
}

func (d *Device) checkMoment(spec string) error {
	t := d.Timeline
	if rest, ok := strings.CutPrefix(spec, "step:"); ok {
		num, _, _ := strings.Cut(rest, ":")
		n, err := strconv.Atoi(num)
		if err != nil || d.Phases == nil {
			return nil // ParseMoment says what is wrong
		}
		for _, s := range d.Phases.Steps {
			if s.Step == n {
				return nil
			}
		}
		return fmt.Errorf("moment %q: no step %d: %s", spec, n, stepsHad(d.Phases.Steps))
	}
	switch {
	case spec == "", spec == "peak", spec == "end", spec == "oom", strings.Contains(spec, ":"):
		return nil
	}
	us, err := units.ParseDuration(spec)
	if err != nil || len(t.Events) == 0 {
		return nil
	}
	if length := t.Events[len(t.Events)-1].TimeUS - t.Events[0].TimeUS; us > length {
		return fmt.Errorf("moment %q: past the recording's end: it lasts %s (use end for its last event)", spec, units.Duration(length))
	}
	return nil
}

// stepsHad names a device's steps for a message: "the steps are 0 to 4",
// "the only step is 3", "no steps were found".
func stepsHad(steps []Step) string {
	switch len(steps) {
	case 0:
		return "no steps were found"
	case 1:
		return fmt.Sprintf("the only step is %d", steps[0].Step)
	}
	first, last := steps[0].Step, steps[len(steps)-1].Step
	if last-first+1 == len(steps) {
		return fmt.Sprintf("the steps are %d to %d", first, last)
	}
	nums := make([]string, len(steps))
	for i, s := range steps {
		nums[i] = strconv.Itoa(s.Step)
	}
	return "the steps are " + strings.Join(nums, ", ")
}
