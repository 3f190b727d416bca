// Package atomicfile writes a file whole or not at all: into a temporary
// file beside the target, synced and renamed over it once complete, so a
// full disk or a failed render leaves the old file as it was, never a cut
// one. A target that is not a regular file (/dev/stdout, a pipe) is
// written in place.
package atomicfile

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Fault, when set (tests), wraps the temporary file's writer: a disk
// that fills up.
var Fault func(io.Writer) io.Writer

// Write writes the file name through fn and returns its size: into a
// temporary file in name's folder, renamed to name once written and
// synced. A name that is not a regular file (/dev/stdout, a pipe) is
// written in place.
func Write(name string, fn func(w io.Writer) error) (int64, error) {
	if st, err := os.Stat(name); err == nil && !st.Mode().IsRegular() {
		f, err := os.OpenFile(name, os.O_WRONLY, 0)
		if err != nil {
			return 0, err
		}
		n, err := writeThrough(f, fn)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return n, err
	}
	dir, base := filepath.Split(name)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return 0, err
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	n, err := writeThrough(tmp, fn)
	if err == nil {
		err = tmp.Sync() // a full disk may say so only now
	}
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if err == nil {
		err = tmp.Close()
	}
	if err != nil {
		return 0, fmt.Errorf("writing %s: %w (the file was left as it was)", name, err)
	}
	done = true
	if err := os.Rename(tmp.Name(), name); err != nil {
		os.Remove(tmp.Name())
		return 0, err
	}
	return n, nil
}

// writeThrough writes fn's output to f, buffered, and returns its size.
func writeThrough(f *os.File, fn func(w io.Writer) error) (int64, error) {
	var w io.Writer = f
	if Fault != nil {
		w = Fault(w)
	}
	cw := &countWriter{w: w}
	bw := bufio.NewWriterSize(cw, 1<<16)
	if err := fn(bw); err != nil {
		return 0, err
	}
	if err := bw.Flush(); err != nil {
		return 0, err
	}
	return cw.n, nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// Overwrites returns the first of inputs (paths or directories; "" is
// skipped) that name is the same file as, and whether there is one:
// writing name would write over an input. A name not there yet overwrites
// nothing.
func Overwrites(name string, inputs ...string) (string, bool) {
	ost, err := os.Stat(name)
	if err != nil {
		return "", false
	}
	for _, in := range inputs {
		if in == "" {
			continue
		}
		if ist, err := os.Stat(in); err == nil && os.SameFile(ost, ist) {
			return in, true
		}
	}
	return "", false
}
