package snapshot

import (
	"bytes"
	"encoding/binary"
	"runtime/debug"
	"slices"
	"sync/atomic"
)

// This file is the unpickler's fast path for what makes up nearly all of a
// big snapshot: batches of trace entries appended to a device's list, each
// entry a dict of known keys with ints, strings and a list of frames already
// seen. pickle.dump writes a list in batches, MARK item… APPENDS, so the
// batches are read here in one go, straight from the input window, into the
// list's events, without the general machine's stack, objects and pairs.
//
// The work is split in two, and the halves run on two cores when the
// window holds several batches: a scanner reads the opcodes of a batch into
// a tape (keys and values as memo indexes, ints, window positions), touching
// nothing of the decoder's; the committer, on the decoding goroutine,
// resolves the tape against the memo, interns strings and stacks in stream
// order as the general machine would, pushes the memo entries and appends
// the entries. The window is not refilled while a scanner runs, so tapes may
// point into it.
//
// Anything the fast path does not know — an opcode, a key, a value of
// another type, a frame defined inside the batch, a batch that does not end
// in APPENDS, the end of the window — gives that batch back to the general
// machine, which reads it as if the fast path did not exist (strings and
// stacks the committer interned for it are interned again, to the same IDs).
// TestFastPathEqualsGeneral and FuzzFastPath check that both give the same
// snapshot, or the same error.

// fastWindow is how much input the fast path wants in the window before a
// run of batches (pickle.dump's batches are 1,000 entries of 50-200 bytes);
// a window with more than fastParallel bytes left gets a scanner goroutine.
const (
	fastWindow   = 2 << 20
	fastParallel = 256 << 10
)

// maxEntryPairs is how many pairs a trace entry the fast path takes may
// have: its keys are distinct, and the committer knows kAction…kFrames.
const maxEntryPairs = kFrames - kAction + 1

// maxFastPending bounds the memo entries one batch may make.
const maxFastPending = 1 << 16

// Value kinds on a tape.
const (
	fvInt  = iota // n
	fvRef         // n: memo index (a str or a stack, by key)
	fvStr         // n: window position, slen bytes
	fvList        // refs[n] frames, their memo indexes in refs[n+1:]
)

// fastPair is one key/value item of a trace entry as the scanner read it.
type fastPair struct {
	// key is the memo index of the key, or with fpKeyStr the window
	// position of a new str (torch writes an annotation's stage and name
	// keys anew each time), klen bytes.
	key   uint32
	kind  uint8
	flags uint8 // fpMemo, fpSame, fpKeyStr, fpKeyMemo
	slen  uint8 // fvStr: length
	klen  uint8
	n     int64
}

const (
	fpMemo = 1 << iota // the value (a new str or list) was memoized
	// fpSame: the value is the one of the previous entry's pair at this
	// place, whose key is the same (used when all keys are).
	fpSame
	fpKeyStr  // the key is a new str
	fpKeyMemo // that was memoized
)

// fastTape is one batch as the scanner read it.
type fastTape struct {
	start int // window position of the batch's MARK
	end   int // after its APPENDS, when ok
	ok    bool
	last  bool // the scanner stopped after this tape
	// joined: the batch ends where the next lane's scanner started.
	joined bool
	pairs  []fastPair
	ev     []int32 // event i's pairs are pairs[ev[i]:ev[i+1]]
	// sameKeys[i]: event i has the keys of event i-1, in the same order.
	sameKeys []bool
	refs     []uint32
}

// frameInfo is what skipFrames needs to know of the input, copied for the
// scanner goroutine.
type frameInfo struct {
	size, base int64
	eof        bool
	end        int
}

// pendingMemo is a memo entry a batch makes, pushed when it is committed.
type pendingMemo struct {
	event bool // the k-th entry of the batch: a tEvent once committed
	open  bool // a list still being resolved: not referable
	v     value
	k     int
}

// fastState is the fast path's scratch, reused from batch to batch.
type fastState struct {
	tapes  [4]fastTape
	tapes2 []fastTape // the second scanner's, made once
	memo   []pendingMemo
	frames []FrameID
	// The keys of the last entry resolved: valid while keysGen is
	// memo.gen+1 (no committed memo entry overwritten since).
	keyRefs []uint32
	keyIDs  []int64
	keySeen uint64
	keysGen uint64
	stacks  listStacks // the stacks that lists of frames read before made
	prev    []int64    // the last entry's resolved values, by pair
	off     bool       // set by tests to read everything with the general machine
	serial  bool       // set by tests: no scanner goroutine
	serial2 bool       // set by tests: one scanner goroutine, not two
	batch   int        // batches read here, for tests
	annots  int        // of which batches of annotations
	joins   int        // second scanners whose tapes were taken, for tests
	// parallelMin, when set (tests), replaces fastParallel.
	parallelMin int
	// Reading by chunks (decode_chunks.go): chunkLen, when set (tests),
	// replaces chunkLen; noChunks (tests) reads by windows only; chunks
	// counts the chunks taken after the one before joined, for tests;
	// then the pools of chunk buffers and of lanes' tapes.
	chunkLen   int
	noChunks   bool
	chunks     int
	chunkBufs  chan []byte
	chunkTapes chan []fastTape
	// The file mapped for the chunk reader (mmap_linux.go), its unmapping,
	// and how much of it was dropped from the resident set; noMap (tests,
	// or after a failed try) reads instead.
	mapped  []byte
	unmap   func()
	dropped int64
	noMap   bool
	maps    int // files mapped, for tests
	// afterMap, when set (tests), runs once the file is mapped.
	afterMap func()
}

// fastBatch reads batches of trace entries from the MARK at in.pos, whose
// list is on top of the stack. It reports whether it read any; in.pos is
// then where the general machine goes on.
func (d *decoder) fastBatch() (bool, error) {
	if d.fast.off || len(d.stack) == 0 {
		return false, nil
	}
	lv := d.stack[len(d.stack)-1]
	if lv.tag != tObj {
		return false, nil
	}
	lo := &d.objs[lv.n]
	if lo.kind != objList || (lo.lkind != listEvents && lo.lkind != listAnnots) || lo.err != nil || lo.stored || lo.hasConv || lo.typed == nil {
		return false, nil
	}
	if m := &d.memo; m.count != m.n || len(m.sparse) != 0 {
		return false, nil
	}
	in := &d.in
	f := &d.fast
	chunks := d.useChunks()
	if in.end-in.pos < fastWindow && !in.eof && len(in.buf) >= 2*fastWindow {
		in.fill(fastWindow)
	}
	buf := in.buf[:in.end]
	fi := frameInfo{size: in.size, base: in.base, eof: in.eof, end: in.end}
	read := false
	par := fastParallel
	if f.parallelMin > 0 {
		par = f.parallelMin
	}
	if chunks || f.serial || len(buf)-in.pos < par {
		for {
			t := &f.tapes[0]
			scanBatch(buf, in.pos, fi, t)
			if !t.ok || !d.commitTape(buf, t, lo, uint32(lv.n)) {
				return read, d.fastErr
			}
			read, in.pos = true, t.end
			if t.last {
				return true, d.fastErr
			}
			// By chunks, once one batch is read here: a list's first
			// batches often define frames, which the fast path gives to
			// the general machine, and a chunk run started on one would
			// be stopped at once, its chunks read and scanned ahead for
			// nothing.
			if chunks && d.useChunks() {
				_, err := d.fastChunks(lo, uint32(lv.n))
				return true, err
			}
		}
	}
	// A scanner goroutine runs ahead while this one commits. With a long
	// window a second one starts at a batch boundary found by its bytes in
	// the window's second half (APPENDS, then MARK EMPTY_DICT MEMOIZE
	// MARK); its tapes are taken only if the first scanner's last batch
	// ends exactly there, which proves the guess.
	split := -1
	if len(buf)-in.pos >= 2*par && !f.serial2 {
		split = findBatchStart(buf, in.pos+(len(buf)-in.pos)/2)
	}
	one := startLane(buf, in.pos, split, fi, f.tapes[:])
	var two *lane
	if split > 0 {
		if len(f.tapes2) == 0 {
			f.tapes2 = make([]fastTape, 48)
		}
		two = startLane(buf, split, -1, fi, f.tapes2)
	}
	li := uint32(lv.n)
	joined, ok := d.commitLane(buf, one, lo, li, &read)
	if two != nil {
		if joined && ok {
			f.joins++
			_, _ = d.commitLane(buf, two, lo, li, &read)
		} else {
			two.discard()
		}
	}
	return read, d.fastErr
}

// lane is one scanner goroutine and the tapes it fills.
type lane struct {
	full, empty chan *fastTape
	stop        atomic.Bool
	closed      bool
}

// startLane scans batches from buf[p] until one does not scan, the window
// ends, or a batch ends at stopAt (when above 0): that tape is marked
// joined.
func startLane(buf []byte, p, stopAt int, fi frameInfo, tapes []fastTape) *lane {
	l := &lane{full: make(chan *fastTape, len(tapes)), empty: make(chan *fastTape, len(tapes))}
	for i := range tapes {
		l.empty <- &tapes[i]
	}
	go func() {
		defer close(l.full)
		// buf may be a mapped file (decode_chunks.go): one cut shorter
		// while it is read faults, and the scan stops there.
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		for t := range l.empty {
			if !noFault(func() { scanBatch(buf, p, fi, t) }) {
				t.ok, t.last = false, true
				l.full <- t
				return
			}
			t.joined = false
			if l.stop.Load() {
				t.ok = false
			}
			if !t.ok {
				t.last = true
			} else if stopAt > 0 && t.end == stopAt {
				t.last, t.joined = true, true
			}
			l.full <- t
			if t.last {
				return
			}
			p = t.end
		}
	}()
	return l
}

// noFault runs fn and reports whether it returned: false when it faulted
// on memory (with debug.SetPanicOnFault set on the goroutine), which is
// what reading a mapped file cut shorter does. Other panics go on.
func noFault(fn func()) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			if !isFault(r) {
				panic(r)
			}
			ok = false
		}
	}()
	fn()
	return true
}

// isFault reports whether a recovered value is a memory fault.
func isFault(r any) bool {
	_, fault := r.(interface{ Addr() uintptr })
	return fault
}

// discard stops the lane's scanner and waits for it.
func (l *lane) discard() {
	l.stop.Store(true)
	if !l.closed {
		l.closed = true
		close(l.empty)
	}
	for range l.full {
	}
}

// commitLane commits l's tapes in order. It reports whether the last one
// was joined to the next lane, and whether every tape was committed; *read
// is set when any was, and d.in.pos is past the last committed one.
func (d *decoder) commitLane(buf []byte, l *lane, lo *object, li uint32, read *bool) (joined, ok bool) {
	for t := range l.full {
		ok = t.ok && d.commitTape(buf, t, lo, li)
		if ok {
			*read = true
			d.in.pos = t.end
		}
		if !ok || t.last {
			joined = ok && t.joined
			l.discard()
			return joined, ok
		}
		l.empty <- t
	}
	return false, false
}

// findBatchStart returns the position of the first MARK at or after from
// that looks like the start of a batch of trace entries following another
// (APPENDS MARK EMPTY_DICT MEMOIZE MARK), or -1.
func findBatchStart(buf []byte, from int) int {
	k := bytes.Index(buf[from:], batchBoundary)
	if k < 0 {
		return -1
	}
	return from + k + 1
}

var batchBoundary = []byte{opAppends, opMark, opEmptyDict, opMemoize, opMark}

// skipFrames skips the FRAME opcodes at buf[p], which pickle puts between
// any two opcodes. A FRAME that claims more than the input holds is left
// for the general machine to report.
//
// The scanners look for a FRAME only where the opcode they find is not one
// they expect: FRAME is none of them, and pickle writes one per 64 KiB, so
// that looking for it first at every opcode cost a sixth of the scan.
func skipFrames(buf []byte, p int, fi *frameInfo) int {
	for p+9 <= len(buf) && buf[p] == opFrame {
		n := binary.LittleEndian.Uint64(buf[p+1:])
		switch {
		case fi.size >= 0 && n > uint64(fi.size-(fi.base+int64(p+9))):
			return p
		case fi.size < 0 && fi.eof && n > uint64(fi.end-(p+9)):
			return p
		}
		p += 9
	}
	return p
}

// expect returns the position of opcode op at buf[p] or past the FRAMEs
// there, and whether it is there.
func expect(buf []byte, p int, op byte, fi *frameInfo) (int, bool) {
	if p < len(buf) && buf[p] == op {
		return p, true
	}
	p = skipFrames(buf, p, fi)
	return p, p < len(buf) && buf[p] == op
}

// scanBatch reads the batch at buf[p] (a MARK) into t. t.ok says whether it
// is one the committer may take; t.last that no batch follows it.
func scanBatch(buf []byte, p int, fi frameInfo, t *fastTape) {
	t.start, t.ok, t.last = p, false, false
	t.pairs, t.ev, t.refs, t.sameKeys = t.pairs[:0], t.ev[:0], t.refs[:0], t.sameKeys[:0]
	if p+1 >= len(buf) || buf[p] != opMark || buf[p+1] != opEmptyDict {
		return
	}
	p++
	for {
		if p >= len(buf) {
			return
		}
		switch buf[p] {
		case opEmptyDict:
			var ok bool
			if p, ok = scanEvent(buf, p, &fi, t); !ok {
				return
			}
			continue
		case opAppends:
			p++
		case opFrame:
			if q := skipFrames(buf, p, &fi); q > p {
				p = q
				continue
			}
			return
		default:
			return
		}
		break
	}
	t.ev = append(t.ev, int32(len(t.pairs)))
	t.end, t.ok = p, true
	// Another batch follows when the next opcodes are MARK, EMPTY_DICT.
	q := skipFrames(buf, p, &fi)
	t.last = !(q+1 < len(buf) && buf[q] == opMark && buf[q+1] == opEmptyDict)
}

// scanRef reads BINGET/LONG_BINGET at buf[p].
func scanRef(buf []byte, p int) (i uint32, next int, ok bool) {
	switch {
	case p+2 <= len(buf) && buf[p] == opBinGet:
		return uint32(buf[p+1]), p + 2, true
	case p+5 <= len(buf) && buf[p] == opLongBinGet:
		return binary.LittleEndian.Uint32(buf[p+1:]), p + 5, true
	}
	return 0, p, false
}

// scanEvent reads one trace entry at buf[p] (EMPTY_DICT). Each value is
// compared with the previous entry's at the same place, so that the
// committer resolves a value once while it repeats.
func scanEvent(buf []byte, p int, fi *frameInfo, t *fastTape) (int, bool) {
	var ok bool
	if p, ok = expect(buf, p+1, opMemoize, fi); !ok {
		return p, false
	}
	if p, ok = expect(buf, p+1, opMark, fi); !ok {
		return p, false
	}
	p++
	n0 := len(t.pairs)
	var prev []fastPair
	if n := len(t.ev); n > 0 {
		prev = t.pairs[t.ev[n-1]:]
	}
	t.ev = append(t.ev, int32(n0))
	// The entry's pairs are written in place, in room made once: built
	// on the stack and appended, a pair's byte fields' stores stalled the
	// 16-byte load of the copy.
	if cap(t.pairs)-n0 < maxEntryPairs {
		t.pairs = slices.Grow(t.pairs, maxEntryPairs)
	}
	room := (*[maxEntryPairs]fastPair)(t.pairs[n0 : n0+maxEntryPairs])
	sameKeys := prev != nil
	for at := 0; ; at++ {
		if p >= len(buf) {
			return p, false
		}
		if buf[p] == opSetItems {
			t.pairs = t.pairs[:n0+at]
			t.sameKeys = append(t.sameKeys, sameKeys && at == len(prev))
			return p + 1, true
		}
		if at == maxEntryPairs {
			return p, false // more keys than the committer knows
		}
		key, next, ok := scanRef(buf, p)
		var kflags, klen uint8
		if !ok {
			if q := skipFrames(buf, p, fi); q > p {
				p, at = q, at-1
				continue
			}
			if buf[p] != opShortBinUnicod || p+2 > len(buf) || p+2+int(buf[p+1]) > len(buf) {
				return p, false
			}
			key, klen, kflags = uint32(p+2), buf[p+1], fpKeyStr
			if next, ok = expect(buf, p+2+int(klen), opMemoize, fi); ok {
				kflags, next = kflags|fpKeyMemo, next+1
			}
		}
		p = next
		pr := &room[at]
		*pr = fastPair{key: key, flags: kflags, klen: klen}
		var pv *fastPair
		if sameKeys = sameKeys && kflags == 0 && at < len(prev) && prev[at].flags&fpKeyStr == 0 && prev[at].key == key; sameKeys {
			pv = &prev[at]
		}
	value:
		if p+2 > len(buf) {
			return p, false
		}
		switch op := buf[p]; op {
		case opBinInt1:
			pr.n, p = int64(buf[p+1]), p+2
		case opBinInt2:
			if p+3 > len(buf) {
				return p, false
			}
			pr.n, p = int64(binary.LittleEndian.Uint16(buf[p+1:])), p+3
		case opBinInt:
			if p+5 > len(buf) {
				return p, false
			}
			pr.n, p = int64(int32(binary.LittleEndian.Uint32(buf[p+1:]))), p+5
		case opLong1:
			k := int(buf[p+1])
			if k > 8 || p+2+k > len(buf) {
				return p, false
			}
			pr.n, p = decodeLong(buf[p+2:p+2+k]), p+2+k
		case opBinGet, opLongBinGet:
			var i uint32
			i, p, _ = scanRef(buf, p)
			pr.kind, pr.n = fvRef, int64(i)
			if pv != nil && pv.kind == fvRef && pv.n == pr.n {
				pr.flags |= fpSame
			}
		case opShortBinUnicod:
			k := int(buf[p+1])
			if p+2+k > len(buf) {
				return p, false
			}
			pr.kind, pr.n, pr.slen = fvStr, int64(p+2), uint8(k)
			if pv != nil && pv.kind == fvStr && pv.slen == pr.slen &&
				string(buf[pv.n:pv.n+int64(pv.slen)]) == string(buf[p+2:p+2+k]) {
				pr.flags |= fpSame
			}
			if p, ok = expect(buf, p+2+k, opMemoize, fi); ok {
				pr.flags, p = pr.flags|fpMemo, p+1
			}
		case opEmptyList:
			pr.kind = fvList
			if p, ok = expect(buf, p+1, opMemoize, fi); ok {
				pr.flags, p = pr.flags|fpMemo, p+1
			}
			if pv != nil && pv.kind != fvList {
				pv = nil
			}
			if p, ok = scanFrames(buf, p, fi, t, pr, pv); !ok {
				return p, false
			}
		case opFrame:
			if q := skipFrames(buf, p, fi); q > p {
				p = q
				goto value
			}
			return p, false
		default:
			return p, false
		}
	}
}

// frameList collects the memo indexes of one list of frames into t.refs as
// refs[n] (their number) and the indexes, unless they are those of a
// previous list (old, at refs[oldAt]): then nothing is written.
type frameList struct {
	t        *fastTape
	old      []uint32
	oldAt    int64
	n        int
	at       int64 // where this list's count is, -1 before it is written
	matching bool
}

func (l *frameList) add(i uint32) {
	t := l.t
	if l.matching {
		if l.n < len(l.old) && l.old[l.n] == i {
			l.n++
			return
		}
		l.matching = false
		l.at = int64(len(t.refs))
		t.refs = append(t.refs, 0)
		t.refs = append(t.refs, l.old[:l.n]...)
	} else if l.at < 0 {
		l.at = int64(len(t.refs))
		t.refs = append(t.refs, 0)
	}
	t.refs = append(t.refs, i)
	l.n++
}

// end returns where the list is and whether it is the old one.
func (l *frameList) end() (int64, bool) {
	t := l.t
	switch {
	case l.matching && l.n == len(l.old):
		return l.oldAt, true
	case l.matching || l.at < 0: // a prefix of the old list, or empty
		at := int64(len(t.refs))
		t.refs = append(t.refs, uint32(l.n))
		t.refs = append(t.refs, l.old[:l.n]...)
		return at, false
	}
	t.refs[l.at] = uint32(l.n)
	return l.at, false
}

// scanFrames reads the items of a new list of frames — MARK ref… APPENDS
// and ref APPEND, as often as they come — for pr, comparing them with pv's,
// the previous entry's list at the same place, when there is one.
func scanFrames(buf []byte, p int, fi *frameInfo, t *fastTape, pr *fastPair, pv *fastPair) (int, bool) {
	l := frameList{t: t, at: -1}
	if pv != nil {
		l.oldAt, l.matching = pv.n, true
		l.old = t.refs[pv.n+1 : pv.n+1+int64(t.refs[pv.n])]
	}
	end := func() {
		var same bool
		if pr.n, same = l.end(); same {
			pr.flags |= fpSame
		}
	}
	for {
		if p >= len(buf) {
			return p, false
		}
		if buf[p] == opMark {
			p++
			for {
				// A run of references, what a list of frames read before
				// is.
			refs:
				for p+5 <= len(buf) {
					switch buf[p] {
					case opBinGet:
						l.add(uint32(buf[p+1]))
						p += 2
					case opLongBinGet:
						l.add(binary.LittleEndian.Uint32(buf[p+1:]))
						p += 5
					default:
						break refs
					}
				}
				if p >= len(buf) {
					return p, false
				}
				if buf[p] == opAppends {
					p++
					break
				}
				i, next, ok := scanRef(buf, p)
				if !ok {
					if q := skipFrames(buf, p, fi); q > p {
						p = q
						continue
					}
					return p, false
				}
				l.add(i)
				p = next
			}
			continue
		}
		i, next, ok := scanRef(buf, p)
		if !ok {
			if q := skipFrames(buf, p, fi); q > p {
				p = q
				continue
			}
			end()
			return p, true // the list ended: a key or SETITEMS follows
		}
		next, ok = expect(buf, next, opAppend, fi)
		if !ok {
			if next >= len(buf) {
				return p, false
			}
			end()
			return p, true // that was the next key
		}
		l.add(i)
		p = next + 1
	}
}

// get resolves memo index i: a committed entry, or one this batch made.
func (d *decoder) fastGet(i uint32) (value, bool) {
	if uint64(i) < d.memo.n {
		v := d.memo.at(uint64(i))
		if v.tag == tObj {
			o := &d.objs[v.n]
			if !o.hasConv {
				return v, false
			}
			o.pinned = true // as the general machine's BINGET does
			v = o.conv
		}
		return v, true
	}
	j := uint64(i) - d.memo.n
	if j >= uint64(len(d.fast.memo)) || d.fast.memo[j].event || d.fast.memo[j].open {
		return value{}, false
	}
	return d.fast.memo[j].v, true
}

// fastStr resolves a str value.
func (d *decoder) fastStr(buf []byte, pr *fastPair) (int64, bool) {
	switch pr.kind {
	case fvRef:
		v, ok := d.fastGet(uint32(pr.n))
		return v.n, ok && v.tag == tStr
	case fvStr:
		v := d.intern(buf[pr.n : pr.n+int64(pr.slen)])
		if pr.flags&fpMemo != 0 {
			d.fast.memo = append(d.fast.memo, pendingMemo{v: v})
		}
		return v.n, true
	}
	return 0, false
}

// commitTape resolves t and, when every entry is one the fast path knows,
// appends them to list lo (object li) and pushes the batch's memo entries.
// A false result leaves the batch to the general machine; d.fastErr is set
// when the budget ran out.
func (d *decoder) commitTape(buf []byte, t *fastTape, lo *object, li uint32) bool {
	f := &d.fast
	f.memo = f.memo[:0]
	if len(t.pairs) > maxFastPending {
		return false
	}
	st := &lo.typed.events
	annots := lo.lkind == listAnnots
	var base int
	var ok bool
	if annots {
		base = len(lo.typed.annots)
		ok = d.resolveAnnots(buf, t, &lo.typed.annots)
	} else {
		d.reserveEvents(st)
		base = st.n
		ok = d.resolveTape(buf, t, st)
	}
	if ok && len(f.memo) > maxFastPending {
		ok = false
	}
	undo := func() {
		if annots {
			clear(lo.typed.annots[base:])
			lo.typed.annots = lo.typed.annots[:base]
		} else {
			st.truncate(base)
		}
	}
	if !ok {
		undo()
		return false
	}
	// Commit the memo entries, in stream order.
	tag := tEvent
	if annots {
		tag = tAnnot
	}
	for i := range f.memo {
		pm := &f.memo[i]
		if pm.event {
			pm.v = value{tag: tag, aux: li, n: int64(base + pm.k)}
		}
	}
	if err := d.memoPushAll(f.memo); err != nil {
		d.fastErr = err
		undo()
		return false
	}
	d.in.pos = t.end
	f.batch++
	if annots {
		f.annots++
	}
	return true
}

// resolveTape appends t's entries to st, resolving them against the memo;
// false when one is not an entry the fast path knows.
func (d *decoder) resolveTape(buf []byte, t *fastTape, st *eventStore) bool {
	f := &d.fast
	for k := 0; k+1 < len(t.ev); k++ {
		f.memo = append(f.memo, pendingMemo{event: true, k: k})
		e := st.next()
		var addr, free int64
		var hasFree bool
		var ccAt, umAt int // order of compile_context and user_metadata, 0 when absent
		var cc, um int64
		pairs := t.pairs[t.ev[k]:t.ev[k+1]]
		sameKeys := k > 0 && t.sameKeys[k]
		if !sameKeys && !d.fastKeys(pairs) {
			return false
		}
		if len(f.prev) < len(pairs) {
			f.prev = make([]int64, len(pairs))
		}
		for at := range pairs {
			pr := &pairs[at]
			key := f.keyIDs[at]
			var ok bool
			isInt := pr.kind == fvInt
			if sameKeys && pr.flags&fpSame != 0 {
				// The previous entry's value: only its memo entry is new.
				if !d.fastSame(pr, key, e, f.prev[at], &cc, &um) {
					return false
				}
				switch key {
				case kCompileContext:
					ccAt = at + 1
				case kUserMetadata:
					umAt = at + 1
				}
				continue
			}
			switch key {
			case kAction:
				var id int64
				if id, ok = d.fastStr(buf, pr); ok {
					e.Action = actionOfString(id)
					f.prev[at] = id
				}
			case kAddr:
				addr, ok = pr.n, isInt
			case kDeviceFree:
				free, ok, hasFree = pr.n, isInt, true
			case kSize:
				e.Size, ok = pr.n, isInt
			case kStream:
				e.Stream, ok = pr.n, isInt
			case kTimeUS:
				e.TimeUS, ok = pr.n, isInt
			case kCompileContext:
				cc, ok = d.fastStr(buf, pr)
				ccAt, f.prev[at] = at+1, cc
			case kUserMetadata:
				um, ok = d.fastStr(buf, pr)
				umAt, f.prev[at] = at+1, um
			case kFrames:
				e.Stack, ok = d.fastFrames(t, pr)
				f.prev[at] = int64(e.Stack)
			default:
				return false
			}
			if !ok {
				return false
			}
		}
		if f.keySeen&(1<<kAction) == 0 {
			return false
		}
		// The general machine converts the entry walking its items
		// backwards: the later of compile_context and user_metadata is
		// interned first.
		if umAt > ccAt {
			e.UserMetadata = d.tableString(uint32(um))
		}
		if ccAt != 0 {
			e.CompileContext = d.tableString(uint32(cc))
		}
		if umAt != 0 && umAt < ccAt {
			e.UserMetadata = d.tableString(uint32(um))
		}
		e.Addr = uint64(addr)
		if e.Action == ActionOOM && hasFree {
			e.Addr = uint64(free)
		}
	}
	return true
}

// resolveAnnots appends t's entries to annots, as resolveTape does trace
// entries: torch's record_function annotations (and memscope's step
// ranges), {stage, name, device, time_us} each, as convAnnot reads them.
func (d *decoder) resolveAnnots(buf []byte, t *fastTape, annots *[]Annotation) bool {
	f := &d.fast
	for k := 0; k+1 < len(t.ev); k++ {
		f.memo = append(f.memo, pendingMemo{event: true, k: k})
		var a Annotation
		var seen uint64
		for _, pr := range t.pairs[t.ev[k]:t.ev[k+1]] {
			// The key: a reference, or a new str (interned, and memoized,
			// before its value is).
			var key int64
			if pr.flags&fpKeyStr != 0 {
				kv := d.intern(buf[pr.key : pr.key+uint32(pr.klen)])
				if pr.flags&fpKeyMemo != 0 {
					f.memo = append(f.memo, pendingMemo{v: kv})
				}
				key = kv.n
			} else if kv, ok := d.fastGet(pr.key); ok && kv.tag == tStr {
				key = kv.n
			} else {
				return false
			}
			if key >= numKeys || seen&(1<<key) != 0 {
				return false // a repeated key: the general machine knows which counts
			}
			seen |= 1 << key
			ok := pr.kind == fvInt
			switch key {
			case kStage:
				var id int64
				id, ok = d.fastStr(buf, &pr)
				a.Start = id == vStart
			case kName:
				var id int64
				if id, ok = d.fastStr(buf, &pr); ok {
					a.Name = d.strs[id]
				}
			case kDevice:
				a.Device = int(pr.n)
			case kTimeUS:
				a.TimeUS = pr.n
			default:
				return false // a key convAnnot does not read: the general machine's
			}
			if !ok {
				return false
			}
		}
		if seen&(1<<kStage) == 0 {
			return false // not an annotation
		}
		*annots = append(*annots, a)
		d.used += costAnnot // checked by the next charge
	}
	return true
}

// fastSame sets the field of key in e to v, the previous entry's resolved
// value of the same pair (a str ID or a StackID), and adds the memo entry
// the pair made, if any.
func (d *decoder) fastSame(pr *fastPair, key int64, e *Event, v int64, cc, um *int64) bool {
	var mv value
	switch key {
	case kAction:
		e.Action = actionOfString(v)
		mv = value{tag: tStr, n: v}
	case kCompileContext:
		*cc, mv = v, value{tag: tStr, n: v}
	case kUserMetadata:
		*um, mv = v, value{tag: tStr, n: v}
	case kFrames:
		e.Stack, mv = StackID(v), value{tag: tStack, n: v}
	default:
		return false
	}
	if pr.flags&fpMemo != 0 {
		d.fast.memo = append(d.fast.memo, pendingMemo{v: mv})
	}
	return true
}

// fastKeys resolves the keys of one entry's pairs into f.keyIDs, checking
// that each is a known entry key and none repeats. Entries of a batch have
// the same keys in the same order, so the last resolution is kept and
// reused while the memo entries it read cannot have changed.
func (d *decoder) fastKeys(pairs []fastPair) bool {
	f := &d.fast
	if f.keysGen == d.memo.gen+1 && len(pairs) == len(f.keyRefs) {
		same := true
		for i := range pairs {
			if pairs[i].key != f.keyRefs[i] || pairs[i].flags&fpKeyStr != 0 {
				same = false
				break
			}
		}
		if same {
			return true
		}
	}
	f.keysGen = 0
	f.keyRefs, f.keyIDs, f.keySeen = f.keyRefs[:0], f.keyIDs[:0], 0
	for i := range pairs {
		r := pairs[i].key
		if pairs[i].flags&fpKeyStr != 0 {
			return false // a trace entry's keys are references
		}
		if uint64(r) >= d.memo.n {
			return false // a key made in this batch: rare, the general machine's
		}
		kv, ok := d.fastGet(r)
		if !ok || kv.tag != tStr || kv.n >= numKeys {
			return false
		}
		if f.keySeen&(1<<uint(kv.n)) != 0 {
			return false // a repeated key: the general machine knows which counts
		}
		f.keySeen |= 1 << uint(kv.n)
		f.keyRefs = append(f.keyRefs, r)
		f.keyIDs = append(f.keyIDs, kv.n)
	}
	f.keysGen = d.memo.gen + 1
	return true
}

// fastFrames resolves a frames value: a reference to a list already read,
// or a new list of frames already seen.
func (d *decoder) fastFrames(t *fastTape, pr *fastPair) (StackID, bool) {
	f := &d.fast
	switch pr.kind {
	case fvRef:
		v, ok := d.fastGet(uint32(pr.n))
		return StackID(v.n), ok && v.tag == tStack
	case fvList:
	default:
		return 0, false
	}
	slot := -1
	if pr.flags&fpMemo != 0 {
		slot = len(f.memo)
		f.memo = append(f.memo, pendingMemo{open: true})
	}
	refs := t.refs[pr.n+1 : pr.n+1+int64(t.refs[pr.n])]
	h := hashRefs(refs)
	id, ok := f.stacks.get(refs, h, d.memo.gen)
	if !ok {
		f.frames = f.frames[:0]
		committed := true
		for _, i := range refs {
			v, ok := d.fastGet(i)
			if !ok || v.tag != tFrame {
				return 0, false
			}
			committed = committed && uint64(i) < d.memo.n
			f.frames = append(f.frames, FrameID(v.n))
		}
		id = d.internStack(f.frames)
		if committed {
			f.stacks.put(refs, h, d.memo.gen, id)
		}
	}
	if slot >= 0 {
		f.memo[slot] = pendingMemo{v: value{tag: tStack, n: int64(id)}}
	}
	return id, true
}
