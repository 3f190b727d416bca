package snapshot

import (
	"io"
	"os"
	"runtime/debug"
)

// When the input is a file (or anything else that reads at an offset and
// seeks), the fast path does not wait for the window: a reader goroutine
// reads the stream ahead in chunks of its own, each starting at a batch
// boundary found by its bytes (findBatchStart), and starts a scanner lane
// on each as soon as it is read, so that the scanners of later chunks run
// while the decoding goroutine commits earlier ones, with no pause where a
// window is refilled. A chunk's tapes are taken only when the last batch of
// the chunk before ended exactly where it starts, which proves the guess;
// anything else ends the run there, as a batch the fast path does not know
// does, and the general machine goes on from that byte.
//
// Each chunk becomes the decoder's window while it is committed, so that
// positions, offsets and what the general machine reads next are as if
// the window had been filled there; when the run ends, the reader is moved
// to the end of that window.

// The chunk a reader goroutine reads: chunkLen bytes in which batches
// start, and chunkSlack more for the batch that crosses the end.
const (
	chunkLen   = 1 << 20
	chunkSlack = 512 << 10
	// chunksAhead is how many chunks may be read and scanned ahead of the
	// one being committed.
	chunksAhead = 4
	// chunkTapes is each lane's tapes: a chunk's batches, so that a lane
	// scans its chunk without waiting for the committer.
	chunkTapes = 12
)

// newTapes makes n tapes with room for a batch of pickle.dump's 1,000
// entries of up to 8 pairs, so that they do not grow by copying while
// the first chunks are scanned.
func newTapes(n int) []fastTape {
	ts := make([]fastTape, n)
	for i := range ts {
		t := &ts[i]
		t.pairs = make([]fastPair, 0, 8<<10)
		t.ev = make([]int32, 0, 1<<10+1)
		t.sameKeys = make([]bool, 0, 1<<10)
		t.refs = make([]uint32, 0, 2<<10)
	}
	return ts
}

// chunk is one chunk read ahead, with the lane scanning it.
type chunk struct {
	buf  []byte // buf[:n] is stream bytes off…off+n
	n    int
	off  int64
	lane *lane
	// tapes are the lane's, returned to the pool with buf once the lane
	// is done.
	tapes []fastTape
	// mapped: buf is a slice of the mapped file, read only, not pooled.
	mapped bool
}

// chunkPipe is the reader goroutine of one run of chunks.
type chunkPipe struct {
	chunks chan *chunk
	quit   chan struct{}
	done   chan struct{}
}

// chunkSizes returns the chunk length and slack (tests set them small).
func (f *fastState) chunkSizes() (int, int) {
	if f.chunkLen > 0 {
		return f.chunkLen, f.chunkLen
	}
	return chunkLen, chunkSlack
}

// useChunks reports whether the batches at the window's position are read
// by chunks: the input reads at offsets, and enough of it is left.
func (d *decoder) useChunks() bool {
	in, f := &d.in, &d.fast
	if in.at == nil || f.serial || f.serial2 || f.noChunks {
		return false
	}
	n, _ := f.chunkSizes()
	return in.remaining() >= int64(2*n)
}

// startChunks starts reading chunks at stream offset from.
func (d *decoder) startChunks(from int64) *chunkPipe {
	in, f := &d.in, &d.fast
	n, slack := f.chunkSizes()
	if f.chunkBufs == nil {
		f.chunkBufs = make(chan []byte, chunksAhead+3)
		f.chunkTapes = make(chan []fastTape, chunksAhead+3)
	}
	if f.mapped == nil && !f.noMap {
		if file, ok := in.at.(*os.File); ok {
			if data, unmap, ok := mapFile(file, in.origin+in.size); ok {
				f.mapped, f.unmap = data, unmap
				f.maps++
				if f.afterMap != nil {
					f.afterMap()
				}
			}
		}
		f.noMap = f.mapped == nil // tried once
	}
	p := &chunkPipe{chunks: make(chan *chunk, chunksAhead), quit: make(chan struct{}), done: make(chan struct{})}
	ra, origin, size, mapped := in.at, in.origin, in.size, f.mapped
	bufs, tapes := f.chunkBufs, f.chunkTapes
	go func() {
		defer close(p.done)
		defer close(p.chunks)
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true)) // see noFault
		off := from
		for off < size {
			var buf []byte
			want := int(min(int64(n+slack), size-off))
			got := want
			if mapped != nil {
				buf = mapped[origin+off : origin+off+int64(want) : origin+off+int64(want)]
			} else {
				select {
				case buf = <-bufs:
				default:
					buf = make([]byte, n+slack)
				}
				// A short read keeps what it got; none ends the run, and the
				// general machine reads on and says what failed.
				if got, _ = ra.ReadAt(buf[:want], origin+off); got <= 0 {
					return
				}
			}
			var ts []fastTape
			select {
			case ts = <-tapes:
			default:
				ts = newTapes(chunkTapes)
			}
			// The next chunk starts at the first batch boundary past n;
			// none there (the list ends, or a batch longer than the
			// slack): this chunk is the last.
			next := -1
			if got > n && off+int64(got) < size {
				if !noFault(func() { next = findBatchStart(buf[:got], n) }) {
					return // the mapped file got shorter: the general machine reads what is left
				}
			}
			fi := frameInfo{size: size, base: off, eof: off+int64(got) >= size, end: got}
			c := &chunk{buf: buf, n: got, off: off, tapes: ts, mapped: mapped != nil}
			c.lane = startLane(buf[:got], 0, next, fi, ts)
			select {
			case p.chunks <- c:
			case <-p.quit:
				c.lane.discard()
				return
			}
			if next < 0 {
				return
			}
			off += int64(next)
		}
	}()
	return p
}

// stop ends the reader goroutine and the lanes of the chunks it read that
// were not committed, and returns their buffers and tapes to the pool.
func (d *decoder) stopChunks(p *chunkPipe) {
	close(p.quit)
	for c := range p.chunks {
		c.lane.discard()
		d.recycleChunk(c)
	}
	<-p.done
}

func (d *decoder) recycleChunk(c *chunk) {
	f := &d.fast
	if !c.mapped {
		select {
		case f.chunkBufs <- c.buf:
		default:
		}
	}
	select {
	case f.chunkTapes <- c.tapes:
	default:
	}
}

// dropMapped drops the mapped file's pages below offset upTo from the
// resident set: they were read.
func (d *decoder) dropMapped(upTo int64) {
	f := &d.fast
	const page = 4096
	lo, hi := (f.dropped+page-1)/page*page, upTo/page*page
	if hi > lo && hi <= int64(len(f.mapped)) {
		dropPages(f.mapped[lo:hi])
		f.dropped = hi
	}
}

// unmapInput unmaps the file the chunk reader mapped, if it did.
func (d *decoder) unmapInput() {
	if f := &d.fast; f.unmap != nil {
		f.unmap()
		f.mapped, f.unmap = nil, nil
	}
}

// fastChunks reads batches by chunks from the MARK at d.in.pos, into list
// lo (object li), as fastBatch does.
func (d *decoder) fastChunks(lo *object, li uint32) (bool, error) {
	in := &d.in
	p := d.startChunks(in.offset())
	read := false
	var window *chunk // the chunk that is now the window
	for c := range p.chunks {
		if window != nil {
			d.recycleChunk(window)
			d.fast.chunks++
			if c.mapped { // what the chunks before this one hold is read
				d.dropMapped(in.origin + c.off)
			}
		}
		window = c
		in.buf, in.base, in.pos, in.end = c.buf[:cap(c.buf)], c.off, 0, c.n
		in.eof = c.off+int64(c.n) >= in.size
		joined, ok := d.commitLane(c.buf[:c.n], c.lane, lo, li, &read)
		if !ok || !joined {
			break
		}
	}
	d.stopChunks(p)
	if window != nil {
		// The window's buffer stays the window: it is not recycled (or,
		// from the mapped file, is copied: the window is written to when
		// it is filled). The reader goes on where the window ends.
		if window.mapped {
			rest := window.buf[in.pos:window.n]
			nb := make([]byte, max(inputBufSize, 2*len(rest)))
			in.buf, in.base, in.end = nb, in.base+int64(in.pos), copy(nb, rest)
			in.pos = 0
		}
		if _, err := in.at.Seek(in.origin+in.base+int64(in.end), io.SeekStart); err != nil {
			in.rerr, in.eof = err, true
		}
	}
	return read, d.fastErr
}
