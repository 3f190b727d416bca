// This file chooses each stack's site, once per frame and once per stack of
// a stack table, and names sites.

package attribution

import (
	"fmt"
	"strings"

	"github.com/memscope/memscope/internal/srcpath"
	"github.com/memscope/memscope/snapshot"
)

// The kinds of Site.
const (
	SiteUser    = "user"    // the innermost counted frame is the user's
	SiteLibrary = "library" // it is library code; Caller is the user's line that called it
	SitePython  = "python"  // no frame counts: the innermost Python frame
	SiteNone    = "none"    // no Python frame: C++, or the autograd engine's thread
	SiteBefore  = "before"  // no stack: the block predates recording
	// SiteUnrecorded: no stack on a device whose history was not recorded
	// at all (a state-only snapshot): nothing says when it was allocated.
	SiteUnrecorded = "unrecorded"
)

// Site names the place an allocation is charged to.
type Site struct {
	Frame snapshot.FrameID
	// Caller is, for a library site, the innermost user frame outside the
	// library that led to it (the user's model(x) line): HasCaller is false
	// when the stack has none (a library called from folded code only).
	Caller    snapshot.FrameID
	HasCaller bool
	// Kind says how Frame was chosen: SiteUser, SiteLibrary, SitePython,
	// SiteNone, SiteBefore, SiteUnrecorded, or SiteBackward (origins.go).
	Kind string
	// Of is, for a site of blocks with no frame of their own (SiteBefore,
	// SiteNone, SiteUnrecorded), the category that says what they are
	// (parameters, optimizer state, gradients), Unknown when none does;
	// Workspace is set for cuBLAS's workspaces, told by their size; Node,
	// with HasNode, is the autograd node's C++ frame (stacks="all"); Near
	// marks a SiteBackward of blocks matched to no forward allocation,
	// named by the backward running when they were made. See
	// Device.SiteOfBlock.
	Of        Category
	Workspace bool
	// CuBLAS is set for the blocks cuBLAS made for a handle's workspace,
	// told by the stack's C++ frames (at::cuda::setWorkspaceForHandle,
	// getCUDABlasLtWorkspace; stacks="all"): the first matmul on a stream
	// makes one and keeps it for the process's life, so the Python line
	// that ran that matmul did not ask for it.
	CuBLAS  bool
	Near    bool
	Node    snapshot.FrameID
	HasNode bool
}

// SiteTable is a filter's decisions about one stack table: each frame's
// class and each stack's site, decided once and kept. It is read-only once
// made, so safe for concurrent use.
type SiteTable struct {
	st      *snapshot.Stacks
	counts  []bool       // by FrameID: library or user code, in focus
	classes []FrameClass // by FrameID
	cublas  []bool       // by FrameID: cuBLAS setting up a workspace (a C++ frame)
	sites   []Site       // distinct sites; sites[i] for stacks whose site index is i
	site    []int32      // by StackID: index into sites
}

// For returns the filter's table for st, making it on first use: the rule
// runs once per frame, the site is chosen once per stack. A table made
// before st grew (frames or stacks added) is extended.
func (f *Filter) For(st *snapshot.Stacks) *SiteTable {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.tables[st]
	if t != nil && len(t.classes) == len(st.Frames) && len(t.site) == st.Len() {
		return t
	}
	if f.tables == nil {
		f.tables = map[*snapshot.Stacks]*SiteTable{}
	}
	nt := &SiteTable{st: st}
	if t != nil {
		// Copy, never append in place: readers may hold the old table.
		nt.counts = append([]bool(nil), t.counts...)
		nt.classes = append([]FrameClass(nil), t.classes...)
		nt.cublas = append([]bool(nil), t.cublas...)
		nt.sites = append([]Site(nil), t.sites...)
		nt.site = append([]int32(nil), t.site...)
	}
	for id := len(nt.classes); id < len(st.Frames); id++ {
		fr := &st.Frames[id]
		c := f.Class(fr)
		nt.classes = append(nt.classes, c)
		nt.counts = append(nt.counts, c != FrameFolded && f.inFocus(fr))
		nt.cublas = append(nt.cublas, !isPython(fr) && (strings.Contains(fr.Name, "setWorkspaceForHandle") || strings.Contains(fr.Name, "getCUDABlasLtWorkspace")))
	}
	index := make(map[Site]int32, len(nt.sites))
	for i, s := range nt.sites {
		index[s] = int32(i)
	}
	for id := len(nt.site); id < st.Len(); id++ {
		s := nt.choose(st.Stack(snapshot.StackID(id)))
		i, ok := index[s]
		if !ok {
			i = int32(len(nt.sites))
			index[s] = i
			nt.sites = append(nt.sites, s)
		}
		nt.site = append(nt.site, i)
	}
	f.tables[st] = nt
	return nt
}

// choose picks the site of a stack (innermost frame first): its innermost
// counted frame, with the user frame that called into it when that frame
// is library code; else its innermost Python frame; else none. A stack
// of cuBLAS making a workspace is marked CuBLAS.
func (t *SiteTable) choose(frames []snapshot.FrameID) Site {
	s := t.chooseFrame(frames)
	for _, fid := range frames {
		if t.cublas[fid] {
			s.CuBLAS = true
			break
		}
	}
	return s
}

func (t *SiteTable) chooseFrame(frames []snapshot.FrameID) Site {
	for i, fid := range frames {
		if !t.counts[fid] {
			continue
		}
		if t.classes[fid] == FrameUser {
			return Site{Frame: fid, Kind: SiteUser}
		}
		s := Site{Frame: fid, Kind: SiteLibrary}
		for _, c := range frames[i+1:] {
			if t.classes[c] == FrameUser {
				s.Caller, s.HasCaller = c, true
				break
			}
		}
		return s
	}
	for _, fid := range frames {
		if isPython(t.st.Frame(fid)) {
			return Site{Frame: fid, Kind: SitePython}
		}
	}
	return Site{Kind: SiteNone}
}

// Sites is the analysis's filter's table of the snapshot's stacks.
func (a *Analysis) Sites() *SiteTable { return a.Filter.For(a.Snapshot.Stacks) }

// Stacks is the stack table t decides about.
func (t *SiteTable) Stacks() *snapshot.Stacks { return t.st }

// Class returns frame id's class.
func (t *SiteTable) Class(id snapshot.FrameID) FrameClass { return t.classes[id] }

// Counts reports whether frame id counts for attribution: library or user
// code, in focus. These are the frames call trees and profiles keep.
func (t *SiteTable) Counts(id snapshot.FrameID) bool { return t.counts[id] }

// Site returns the site of stack id.
func (t *SiteTable) Site(id snapshot.StackID) Site { return t.sites[t.site[id]] }

// siteIndex returns the index of stack id's site among the table's
// distinct sites: two stacks share it exactly when they share the site.
func (t *SiteTable) siteIndex(id snapshot.StackID) int32 { return t.site[id] }

// SiteOf returns the site of stack id in st (see Filter): its innermost
// counted frame (a library frame with the user's line that called it), else
// its innermost Python frame, else none.
func (f *Filter) SiteOf(st *snapshot.Stacks, id snapshot.StackID) Site {
	return f.For(st).Site(id)
}

// Label is a site's one-line name: "file:line function", and for a library
// site with a caller "file:line function (called from file:line function)".
func (s Site) Label(st *snapshot.Stacks) string {
	if label, ok := s.originLabel(st); ok {
		return label
	}
	switch s.Kind {
	case SiteNone:
		return "(no Python frame: C++ or autograd engine)"
	case SiteBefore:
		return "(allocated before recording began)"
	case SiteUnrecorded:
		return "(no history recorded)"
	}
	label := FrameLabel(st.Frame(s.Frame))
	if s.HasCaller {
		label += " (called from " + FrameLabel(st.Frame(s.Caller)) + ")"
	}
	return label
}

// FrameLabel names one frame: "file:line function", the file as every
// label shows it (srcpath.Show: an installed package's or the standard
// library's relative to where it is imported from, transformers/
// activations.py; the user's as given).
func FrameLabel(fr *snapshot.Frame) string {
	return fmt.Sprintf("%s:%d %s", srcpath.Show(fr.Filename), fr.Line, fr.Name)
}

// FileBase is the last element of a frame's file name, with '/' or '\'
// separators: "modeling_llama.py" for a Linux or a Windows path alike.
func FileBase(name string) string {
	if i := strings.LastIndexAny(name, `/\`); i >= 0 && i < len(name)-1 {
		return name[i+1:]
	}
	return name
}
