package trace

import (
	"bytes"
	"slices"
)

// Parallel scanning of the event array. A reader goroutine cuts the input
// into chunks at what looks like the end of an event ('}' followed by
// whitespace, ',', whitespace and '{'), two workers scan chunks with the
// fast scanner into compact records, and the decoding goroutine keeps the
// records chunk by chunk, in file order, exactly as fastEvents would.
//
// A cut is only a guess: a worker starts its chunk in the state "just after
// an event" and the cut is right only if the previous chunk's worker ended
// its last event exactly at the chunk's end. Each chunk is kept only once
// every chunk before it checked out, so what is kept is what the
// sequential scanner would keep. At the first chunk that does not scan to
// its end (the array's ']', damage, a wrong cut, the end of the input) the
// pipeline stops, and the unscanned bytes from the end of the last event
// kept go back to fastEvents' sequential loop (and from it to jsontext).

// fastChunk is the chunk size of the parallel scanner (decodeTrace).
const fastChunk = 2 << 20

// maxChunk bounds a chunk grown in search of a cut.
const maxChunk = 32 << 20

// fastRec is one event read by a worker: rawEvent with its strings in the
// chunk's arena (cat, name, pid, tid one after another from off).
type fastRec struct {
	ts, dur, id                  int64
	args                         rawArgs
	off, catEnd, nameEnd, pidEnd uint32
	tidEnd                       uint32
	ph                           byte
	hasTS, hasDur, hasID, badTS  bool
}

type fastJob struct {
	buf   []byte // the chunk
	first bool   // the chunk starts the array: no ',' before its first event
	final bool   // no chunk follows
	// Results, valid once done is closed.
	recs  []fastRec
	arena []byte
	last  int // just past the last event scanned
	done  chan struct{}
}

// scan reads the chunk's events into recs.
func (j *fastJob) scan(e *rawEvent) {
	j.recs, j.arena, j.last = j.recs[:0], j.arena[:0], 0
	for first := j.first; ; first = false {
		i, n, st, badTS := nextEvent(j.buf, j.last, first, e)
		if st != scanOK {
			break
		}
		r := fastRec{
			ts: e.ts, dur: e.dur, id: e.id, args: e.args,
			off: uint32(len(j.arena)), ph: e.ph,
			hasTS: e.hasTS, hasDur: e.hasDur, hasID: e.hasID, badTS: badTS,
		}
		j.arena = append(j.arena, e.cat...)
		r.catEnd = uint32(len(j.arena))
		j.arena = append(j.arena, e.name...)
		r.nameEnd = uint32(len(j.arena))
		j.arena = append(j.arena, e.pid...)
		r.pidEnd = uint32(len(j.arena))
		j.arena = append(j.arena, e.tid...)
		r.tidEnd = uint32(len(j.arena))
		j.recs = append(j.recs, r)
		j.last = i + n
	}
}

// findCut returns the index just past the '}' of the last "} , {" in b
// (whitespace allowed around the ','), or -1.
func findCut(b []byte) int {
	for end := len(b); ; {
		q := bytes.LastIndexByte(b[:end], '{')
		if q < 0 {
			return -1
		}
		end = q
		i := q - 1
		for i >= 0 && isWS(b[i]) {
			i--
		}
		if i < 0 || b[i] != ',' {
			continue
		}
		for i--; i >= 0 && isWS(b[i]); i-- {
		}
		if i >= 0 && b[i] == '}' {
			return i + 1
		}
	}
}

func isWS(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }

// parallelEvents scans events from unread (the bytes at absolute offset
// base, just after the '[') and then d.src, on chunks in parallel. It
// returns the unscanned bytes from just after the last event kept, their
// offset, the number of events kept and the read error that ended d.src
// (nil while it may have more).
func (d *decoder) parallelEvents(unread []byte, base int64) ([]byte, int64, int, error) {
	size := d.chunk
	order := make(chan *fastJob, 3) // chunks in file order, to keep
	work := make(chan *fastJob, 3)  // chunks to scan
	stop := make(chan struct{})
	free := make(chan *fastJob, 8)
	type readerEnd struct {
		carry []byte
		err   error
	}
	ended := make(chan readerEnd, 1)

	// The reader.
	go func() {
		defer close(order)
		defer close(work)
		carry, first := unread, true
		var rerr error
		for {
			select {
			case <-stop:
				ended <- readerEnd{carry, rerr}
				return
			default:
			}
			var j *fastJob
			select {
			case j = <-free:
			default:
				j = &fastJob{done: make(chan struct{}, 1)}
			}
			buf := append(j.buf[:0], carry...)
			cut := -1
			for {
				for len(buf) < size && rerr == nil {
					if cap(buf)-len(buf) < 4<<10 {
						buf = slices.Grow(buf, max(len(buf), 64<<10))
					}
					n, err := d.src.Read(buf[len(buf):min(cap(buf), size)])
					buf = buf[:len(buf)+n]
					rerr = err
				}
				if rerr != nil {
					break
				}
				if cut = findCut(buf); cut > 0 || len(buf) >= maxChunk {
					break
				}
				size = 2*len(buf) + d.chunk // no cut yet: read as much again
			}
			size = d.chunk
			j.first = first
			j.final = cut <= 0
			if j.final {
				j.buf, carry = buf, nil
			} else {
				j.buf = buf[:cut]
				carry = bytes.Clone(buf[cut:])
			}
			select {
			case order <- j:
			case <-stop:
				ended <- readerEnd{append(buf[:0:0], buf...), rerr}
				return
			}
			work <- j
			if j.final {
				ended <- readerEnd{nil, rerr}
				return
			}
			first = false
		}
	}()

	// The workers.
	for range 2 {
		go func() {
			var e rawEvent
			for j := range work {
				j.scan(&e)
				j.done <- struct{}{}
			}
		}()
	}

	k := 0
	var view rawEvent
	var tail []byte
	for j := range order {
		<-j.done
		for i := range j.recs {
			r := &j.recs[i]
			a := j.arena
			view = rawEvent{
				ph: r.ph, cat: a[r.off:r.catEnd], name: a[r.catEnd:r.nameEnd],
				pid: a[r.nameEnd:r.pidEnd], tid: a[r.pidEnd:r.tidEnd],
				ts: r.ts, dur: r.dur, id: r.id,
				hasTS: r.hasTS, hasDur: r.hasDur, hasID: r.hasID, args: r.args,
			}
			d.addEvent(&view, r.badTS)
		}
		k += len(j.recs)
		if j.last != len(j.buf) || j.final {
			tail = j.buf[j.last:]
			base += int64(j.last)
			break
		}
		base += int64(len(j.buf))
		select {
		case free <- j:
		default:
		}
	}
	// Stop the reader and gather what it read past the chunk in hand.
	close(stop)
	rest := bytes.Clone(tail)
	for j := range order {
		<-j.done
		rest = append(rest, j.buf...)
	}
	end := <-ended
	rest = append(rest, end.carry...)
	return rest, base, k, end.err
}
