package attribution

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/memscope/memscope/snapshot"
)

// DefaultIgnore matches frames that are not the user's code: torch and other
// installed packages, the standard library, the interpreter, and C++ frames.
const DefaultIgnore = `(^|/)(site-packages|dist-packages)/|^<(site-packages|python|frozen)[^>]*>|^\?\?$|^$|(^|/)torch/|(^|/)lib/python3[.0-9]*/`

// Filter decides which frames are the user's. A frame is the user's when it
// is a Python frame (line > 0), its filename does not match Ignore, and
// (when Focus is set) it matches Focus.
type Filter struct {
	Ignore *regexp.Regexp // nil: ignore nothing
	Focus  *regexp.Regexp // nil: no focus
}

// NewFilter compiles a filter; empty strings mean the default ignore list
// and no focus.
func NewFilter(ignore, focus string) (*Filter, error) {
	if ignore == "" {
		ignore = DefaultIgnore
	}
	f := &Filter{}
	var err error
	if f.Ignore, err = regexp.Compile(ignore); err != nil {
		return nil, fmt.Errorf("--ignore %q: %w", ignore, err)
	}
	if focus != "" {
		if f.Focus, err = regexp.Compile(focus); err != nil {
			return nil, fmt.Errorf("--focus %q: %w", focus, err)
		}
	}
	return f, nil
}

// User reports whether fr is a user frame.
func (f *Filter) User(fr *snapshot.Frame) bool {
	if !isPython(fr) {
		return false
	}
	if f.Ignore != nil && f.Ignore.MatchString(fr.Filename) {
		return false
	}
	return f.Focus == nil || f.Focus.MatchString(fr.Filename)
}

func isPython(fr *snapshot.Frame) bool {
	return fr.Line > 0 && strings.HasSuffix(fr.Filename, ".py")
}

// Site names the place an allocation is charged to.
type Site struct {
	Frame snapshot.FrameID
	// Kind says how Frame was chosen: "user" (the innermost user frame),
	// "python" (no user frame; the innermost Python frame), "none" (the
	// stack has no Python frame: C++ or the autograd engine's thread), or
	// "before" (no stack: the block predates recording), or "unrecorded"
	// (no stack on a device whose history was not recorded at all).
	Kind string
}

// SiteOf returns the site of stack id: its innermost user frame, else its
// innermost Python frame, else none.
func (f *Filter) SiteOf(st *snapshot.Stacks, id snapshot.StackID) Site {
	frames := st.Stack(id)
	for _, fid := range frames {
		if f.User(st.Frame(fid)) {
			return Site{Frame: fid, Kind: "user"}
		}
	}
	for _, fid := range frames {
		if isPython(st.Frame(fid)) {
			return Site{Frame: fid, Kind: "python"}
		}
	}
	return Site{Kind: "none"}
}

// Label is a site's one-line name: "file:line function".
func (s Site) Label(st *snapshot.Stacks) string {
	switch s.Kind {
	case "none":
		return "(no Python frame: C++ or autograd engine)"
	case "before":
		return "(allocated before recording began)"
	case "unrecorded":
		return "(no history recorded)"
	}
	fr := st.Frame(s.Frame)
	return fmt.Sprintf("%s:%d %s", fr.Filename, fr.Line, fr.Name)
}
