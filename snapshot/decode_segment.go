package snapshot

// convSegment converts a segment dict. Block addresses are computed from
// the segment address and the sizes of the blocks before them, as the
// serializer and MemoryViz do; a block's own "address" is not read.
func (d *decoder) convSegment(c *object) (s Segment, legacy bool, err error) {
	var blocks value
	var seen uint64
	for i := len(c.pairs) - 1; i >= 0; i-- {
		p := c.pairs[i]
		var n int64
		switch lastKey(p.k, &seen) {
		case kDevice:
			n, err = d.intField(c, "segment", p)
			s.Device = int(n)
		case kAddress:
			n, err = d.intField(c, "segment", p)
			s.Address = uint64(n)
		case kTotalSize:
			s.TotalSize, err = d.intField(c, "segment", p)
		case kAllocatedSize:
			s.AllocatedSize, err = d.intField(c, "segment", p)
		case kActiveSize:
			s.ActiveSize, err = d.intField(c, "segment", p)
		case kRequestedSize:
			s.RequestedSize, err = d.intField(c, "segment", p)
		case kStream:
			s.Stream, err = d.intField(c, "segment", p)
		case kSegmentType:
			var id uint32
			id, err = d.strField(c, "segment", p)
			s.Small = id == vSmall
		case kSegmentPoolID:
			s.Pool, err = d.poolField(c, p)
		case kIsExpandable:
			s.Expandable, err = d.boolField(c, "segment", p)
		case kFrames:
			s.Stack, err = d.stackField(c, "segment", p)
		case kBlocks:
			blocks = p.v
		}
		if err != nil {
			return s, false, err
		}
	}
	s.Blocks, legacy, err = d.blocksOf(c, blocks)
	addr := s.Address
	for i := range s.Blocks {
		s.Blocks[i].Address = addr
		addr += uint64(s.Blocks[i].Size)
	}
	return s, legacy, err
}

// blocksOf returns the blocks of a segment's "blocks" list, owned by the
// caller.
func (d *decoder) blocksOf(c *object, v value) ([]Block, bool, error) {
	v = d.resolve(v)
	if v.tag == tStack && v.n == 0 {
		return nil, false, nil
	}
	if v.tag == tObj && d.objs[v.n].kind == objList {
		o := &d.objs[v.n]
		if o.err != nil {
			return nil, false, o.err
		}
		switch o.lkind {
		case listEmpty:
			o.stored = true
			return nil, false, nil
		case listBlocks:
			o.stored = true
			b := o.typed.blocks
			if o.used { // the same list in two segments: each gets its own
				if d.blockCopies += len(b); d.blockCopies > maxBlockCopies {
					return nil, false, d.failAt(c.off, kindLimit, "more than %d blocks copied for segments sharing their blocks", maxBlockCopies)
				}
				b = append([]Block(nil), b...)
			}
			o.used = true
			return b, o.typed.legacy, nil
		}
	}
	return nil, false, d.failAt(c.off, kindSchema, "segment: \"blocks\" is %s, want a list of blocks", d.describe(v))
}

// poolField reads segment_pool_id: a pair of ints (a tuple, or a list in
// JSON), or None for the default pool.
func (d *decoder) poolField(c *object, p kv) (PoolID, error) {
	v := d.resolve(p.v)
	if v.tag == tNone {
		return PoolID{}, nil
	}
	var items []value
	switch {
	case v.tag == tTuple:
		items = d.tuples.items(v)
	case v.tag == tObj && d.objs[v.n].kind == objList && d.objs[v.n].lkind == listGeneric && d.objs[v.n].err == nil:
		items = d.objs[v.n].items
	}
	if len(items) == 2 {
		a, err1 := d.intField(c, "segment_pool_id", kv{p.k, items[0]})
		b, err2 := d.intField(c, "segment_pool_id", kv{p.k, items[1]})
		if err1 == nil && err2 == nil {
			return PoolID{A: a, B: b}, nil
		}
	}
	return PoolID{}, d.badField(c, "segment", p, "a pair of ints")
}

// convAnnot converts an external_annotations entry.
func (d *decoder) convAnnot(c *object) (a Annotation, err error) {
	var seen uint64
	for i := len(c.pairs) - 1; i >= 0; i-- {
		p := c.pairs[i]
		switch lastKey(p.k, &seen) {
		case kStage:
			var id uint32
			id, err = d.strField(c, "annotation", p)
			a.Start = id == vStart
		case kName:
			var id uint32
			id, err = d.strField(c, "annotation", p)
			a.Name = d.strs[id]
		case kDevice:
			var n int64
			n, err = d.intField(c, "annotation", p)
			a.Device = int(n)
		case kTimeUS:
			a.TimeUS, err = d.intField(c, "annotation", p)
		}
		if err != nil {
			return a, err
		}
	}
	return a, nil
}
