package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// This file writes the files named by -o. A report or profile is written
// to a temporary file beside the target and renamed over it once complete,
// so that a full disk or a failed render leaves the old file as it was,
// never a cut one; and a target that is one of the command's inputs is
// refused before anything is read.

// refuseOverInput returns a usage error when out names the same file as
// one of inputs (paths or run directories; "" is skipped).
func refuseOverInput(out string, inputs ...string) error {
	ost, err := os.Stat(out)
	if err != nil {
		return nil // not there yet: no input
	}
	for _, in := range inputs {
		if in == "" {
			continue
		}
		ist, err := os.Stat(in)
		if err != nil {
			continue
		}
		if os.SameFile(ost, ist) {
			return usageErrorf("-o %s is %s, an input of this command: refusing to write over it", out, in)
		}
	}
	return nil
}

// outputFault, when set (tests), wraps the temporary file's writer: a disk
// that fills up.
var outputFault func(io.Writer) io.Writer

// writeFile writes the file name through fn and returns its size: into a
// temporary file in name's folder, renamed to name once written and
// synced. A name that is not a regular file (/dev/stdout, a pipe) is
// written in place.
func writeFile(name string, fn func(w io.Writer) error) (int64, error) {
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
	if outputFault != nil {
		w = outputFault(w)
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
