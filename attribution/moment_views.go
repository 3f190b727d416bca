// This file shapes what was live at one moment for display: the call tree
// of the frames that count, pruned, and how full each reserved segment is.

package attribution

import (
	"fmt"
	"sort"

	"github.com/memscope/memscope/snapshot"
)

// TreeNode is one node of a pruned call tree of counted frames, ready to show:
// its bytes include its children's.
type TreeNode struct {
	Kind TreeNodeKind
	// Name is "function file.py:123" for a frame, the site's label for a
	// site; Path the frame's full file name and line (with its callers'
	// when a chain was collapsed into it) or the site's label. A self node
	// has its parent's Path; a smaller node neither.
	Name, Path string
	Bytes      int64
	Count      int
	Children   []*TreeNode
	// Smaller is, for a smaller node, how many callees it merges, each
	// under MinShare of the total or past the MaxNodes bound.
	Smaller  int
	MinShare float64
	MaxNodes int
}

// TreeNodeKind is what a call tree node stands for.
type TreeNodeKind int

const (
	TreeFrame   TreeNodeKind = iota // a frame that counts
	TreeSite                        // blocks with no such frame, under their site
	TreeSelf                        // bytes its parent frame allocated itself
	TreeSmaller                     // the callees of its parent that were cut
	TreeRoot                        // everything allocated at the moment, named by its label
)

// UserTree builds the call tree of the blocks allocated at m from the
// frames that count only (user and library code: the filter's view, as
// pprof shows it), outermost frame at the root's children. A block with no
// such frame hangs from a node named by its site ("(allocated before
// recording began)", "(no Python frame…)", or its innermost Python frame),
// and a backward block the autograd engine made under the frames of the
// forward allocation it is the gradient of, as a node named by its site
// ("… (backward, autograd)"). The tree keeps at most maxNodes frame
// nodes, none smaller than minShare of the total; what is cut adds up in
// one TreeSmaller node per parent, and bytes allocated by a frame that
// also has children shown go to a TreeSelf child, so children always sum to
// their parent. A chain of frames that pass all their bytes to one callee
// is one node, named by the innermost.
func (d *Device) UserTree(m *Moment, minShare float64, maxNodes int) *TreeNode {
	st := d.an.Snapshot.Stacks
	f := d.an.Filter
	type node struct {
		kind     TreeNodeKind
		key      string
		name     string
		path     string
		bytes    int64
		count    int
		self     int64
		depth    int
		parent   *node
		children map[string]*node
		order    []*node
	}
	root := &node{kind: TreeRoot, name: m.Label, children: map[string]*node{}}
	var all []*node
	child := func(n *node, kind TreeNodeKind, key, name, path string) *node {
		c := n.children[key]
		if c == nil {
			c = &node{kind: kind, key: key, name: name, path: path, depth: n.depth + 1, parent: n, children: map[string]*node{}}
			n.children[key] = c
			n.order = append(n.order, c)
			all = append(all, c)
		}
		return c
	}
	// Blocks sharing a stack take the same path: insert each stack once.
	// A block whose site its stack does not decide (Device.BlockSite) is
	// grouped by that site too; a backward block takes the path of the
	// forward allocation it is the gradient of, under a node of its site.
	type group struct {
		stack    snapshot.StackID
		site     Site
		special  bool
		backward bool
	}
	type sum struct{ bytes, count int64 }
	var order []group
	groups := map[group]*sum{}
	for i := range m.Live {
		b := &m.Live[i]
		if b.PendingFree {
			continue
		}
		g := group{stack: b.Stack}
		if site, ok := d.BlockSite(b); ok {
			g.site, g.special = site, true
			if fwd, ok := d.BackwardOf(b); ok {
				g.stack, g.backward = fwd, true
			}
		}
		s := groups[g]
		if s == nil {
			s = &sum{}
			groups[g] = s
			order = append(order, g)
		}
		s.bytes += b.Size
		s.count++
	}
	tab := f.For(st)
	var frames []snapshot.FrameID
	for _, g := range order {
		s := groups[g]
		frames = frames[:0]
		for _, fid := range st.Stack(g.stack) {
			if tab.Counts(fid) {
				frames = append(frames, fid)
			}
		}
		n := root
		n.bytes += s.bytes
		n.count += int(s.count)
		site := tab.Site(g.stack)
		if g.special {
			site = g.site
		}
		if len(frames) == 0 && !g.backward {
			label := site.Label(st)
			n = child(n, TreeSite, "site:"+label, label, label)
		}
		for k := len(frames) - 1; k >= 0; k-- {
			fr := st.Frame(frames[k])
			n = child(n, TreeFrame, fmt.Sprint(frames[k]), fmt.Sprintf("%s %s:%d", fr.Name, FileBase(fr.Filename), fr.Line),
				FrameLabel(fr))
		}
		if g.backward {
			label := site.Label(st)
			n = child(n, TreeSite, "site:"+label, backwardName(site, st), label)
		}
		for c := n; c != root; c = c.parent {
			c.bytes += s.bytes
			c.count += int(s.count)
		}
		n.self += s.bytes
	}

	// Keep the largest nodes; parents sort before their children (a parent
	// holds at least its child's bytes, and depth breaks ties).
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].bytes != all[j].bytes {
			return all[i].bytes > all[j].bytes
		}
		return all[i].depth < all[j].depth
	})
	keep := map[*node]bool{root: true}
	minBytes := int64(minShare * float64(root.bytes))
	for _, n := range all {
		if len(keep) > maxNodes || n.bytes < minBytes {
			break
		}
		if keep[n.parent] {
			keep[n] = true
		}
	}
	var build func(n *node) *TreeNode
	build = func(n *node) *TreeNode {
		out := &TreeNode{Kind: n.kind, Name: n.name, Path: n.path, Bytes: n.bytes, Count: n.count}
		var cut int64
		var cutN int
		for _, c := range n.order {
			if keep[c] {
				out.Children = append(out.Children, build(c))
			} else {
				cut += c.bytes
				cutN++
			}
		}
		if len(out.Children) == 0 {
			return out
		}
		sort.SliceStable(out.Children, func(i, j int) bool { return out.Children[i].Bytes > out.Children[j].Bytes })
		if n.self > 0 && n != root {
			out.Children = append(out.Children, &TreeNode{Kind: TreeSelf, Path: n.path, Bytes: n.self})
		}
		if cut > 0 {
			out.Children = append(out.Children, &TreeNode{Kind: TreeSmaller, Bytes: cut,
				Smaller: cutN, MinShare: minShare, MaxNodes: maxNodes})
		}
		return out
	}
	out := build(root)
	for i, c := range out.Children {
		out.Children[i] = collapse(c)
	}
	return out
}

// collapse merges each run of frames that pass all their bytes to one
// callee (main → train → step) into its innermost node, whose Path then
// names the callers, so that the treemap's first levels are where memory
// divides.
func collapse(n *TreeNode) *TreeNode {
	for len(n.Children) == 1 && n.Children[0].Bytes == n.Bytes {
		c := n.Children[0]
		c.Path = n.Path + " › " + c.Path
		n = c
	}
	for i, c := range n.Children {
		n.Children[i] = collapse(c)
	}
	return n
}

// SegmentFill is how full one reserved segment is at a moment.
type SegmentFill struct {
	Addr       uint64
	Size       int64
	Expandable bool // adjacent mapped ranges of an expandable segment, as one
	// Allocated and PendingFree are the bytes of its allocated blocks and
	// of blocks freed but not yet released (waiting on another stream);
	// Free is the rest, in Holes pieces, the largest LargestHole.
	Allocated, PendingFree, Free int64
	Blocks, Holes                int
	LargestHole                  int64
}

// SegmentFills are the segments at a moment, largest first, cut to a bound.
type SegmentFills struct {
	Shown []SegmentFill
	// Rest sums the segments left out (Addr 0); RestCount counts them.
	Rest      SegmentFill
	RestCount int
}

// SegmentFills measures every reserved range at m (adjacent mapped ranges
// of an expandable segment are one, as for holes) and keeps the largest
// maxShown.
func (d *Device) SegmentFills(m *Moment, maxShown int) SegmentFills {
	var all []SegmentFill
	m.segments(func(s *segmentView) {
		sf := SegmentFill{Addr: s.Addr, Size: int64(s.End - s.Addr), Expandable: s.Expandable,
			Blocks: len(s.Live), Holes: len(s.Holes)}
		for i := range s.Live {
			if b := &s.Live[i]; b.PendingFree {
				sf.PendingFree += b.Size
			} else {
				sf.Allocated += b.Size
			}
		}
		for _, g := range s.Holes {
			sf.Free += g
			sf.LargestHole = max(sf.LargestHole, g)
		}
		all = append(all, sf)
	})
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].Size != all[j].Size {
			return all[i].Size > all[j].Size
		}
		return all[i].Addr < all[j].Addr
	})
	out := SegmentFills{Shown: all[:min(len(all), maxShown)]}
	for _, s := range all[len(out.Shown):] {
		out.RestCount++
		out.Rest.Size += s.Size
		out.Rest.Allocated += s.Allocated
		out.Rest.PendingFree += s.PendingFree
		out.Rest.Free += s.Free
		out.Rest.Blocks += s.Blocks
		out.Rest.Holes += s.Holes
		out.Rest.LargestHole = max(out.Rest.LargestHole, s.LargestHole)
	}
	if out.Shown == nil {
		out.Shown = []SegmentFill{}
	}
	return out
}

// backwardName is the short name of a backward site's node under its
// forward frames: "backward (autograd)", with the node where recorded.
func backwardName(s Site, st *snapshot.Stacks) string {
	switch {
	case s.HasNode:
		return "backward (autograd: " + NodeName(st.Frame(s.Node).Name) + ")"
	case s.Near:
		return "backward's temporaries (autograd)"
	}
	return "backward (autograd)"
}
