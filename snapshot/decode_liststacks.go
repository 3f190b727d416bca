package snapshot

import "slices"

// listStacks remembers, for the fast path, the stack that each list of
// frame memo indexes made: a trace entry's frames are a new list each
// time, of frames read long before, so the same lists come back entry
// after entry. A list found here skips resolving every frame against the
// memo and interning the stack. The entries hold while no memo entry
// already set changes (memo.gen); only lists of committed entries are
// kept, and the lists' total length is bounded.
type listStacks struct {
	gen   uint64 // memo.gen+1 when the table was filled; 0: empty
	slots []listStack
	used  int
	refs  []uint32 // the lists, one after another
}

// listStack is one slot: the list at refs[off:off+n] makes stack id; n is 0
// in an empty slot (empty lists are not kept).
type listStack struct {
	tag    uint32
	off, n uint32
	id     StackID
}

const (
	listStacksMin = 1 << 10
	// maxListStacks and maxListStackRefs bound the lists kept and their
	// frame indexes (8 and 16 MiB): past them, new lists are resolved as
	// before but not remembered.
	maxListStacks    = 1 << 18
	maxListStackRefs = 4 << 20
)

func hashRefs(refs []uint32) uint64 {
	h := uint64(len(refs)) * 0x9E3779B97F4A7C15
	for _, r := range refs {
		h = (h ^ uint64(r)) * 0x100000001B3
		h ^= h >> 29
	}
	return h
}

// get returns the stack list refs made, if it is known for memo
// generation gen.
func (c *listStacks) get(refs []uint32, h uint64, gen uint64) (StackID, bool) {
	if c.gen != gen+1 || len(refs) == 0 || c.used == 0 {
		return 0, false
	}
	mask := uint64(len(c.slots) - 1)
	tag := uint32(h >> 32)
	for i := h & mask; ; i = (i + 1) & mask {
		s := &c.slots[i]
		if s.n == 0 {
			return 0, false
		}
		if s.tag == tag && int(s.n) == len(refs) && slices.Equal(c.refs[s.off:s.off+s.n], refs) {
			return s.id, true
		}
	}
}

// put remembers that refs, all committed entries of memo generation gen,
// make stack id.
func (c *listStacks) put(refs []uint32, h uint64, gen uint64, id StackID) {
	if c.gen != gen+1 {
		clear(c.slots)
		c.used, c.refs, c.gen = 0, c.refs[:0], gen+1
	}
	if len(refs) == 0 || c.used >= maxListStacks || len(c.refs)+len(refs) > maxListStackRefs {
		return
	}
	if 2*(c.used+1) > len(c.slots) {
		c.grow()
	}
	mask := uint64(len(c.slots) - 1)
	i := h & mask
	for c.slots[i].n != 0 {
		i = (i + 1) & mask
	}
	c.slots[i] = listStack{tag: uint32(h >> 32), off: uint32(len(c.refs)), n: uint32(len(refs)), id: id}
	c.refs = append(c.refs, refs...)
	c.used++
}

func (c *listStacks) grow() {
	old := c.slots
	c.slots = make([]listStack, max(listStacksMin, 2*len(old)))
	mask := uint64(len(c.slots) - 1)
	for _, s := range old {
		if s.n == 0 {
			continue
		}
		i := hashRefs(c.refs[s.off:s.off+s.n]) & mask
		for c.slots[i].n != 0 {
			i = (i + 1) & mask
		}
		c.slots[i] = s
	}
}
