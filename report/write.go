package report

import (
	"errors"
	"fmt"
	"io"

	"github.com/memscope/memscope/report/jsondoc"
)

// Format is a form a result can be written in. A command chooses it once,
// from its flags, and hands every result to Write (or a Writer) with it.
type Format int

const (
	Text  Format = iota // aligned text for a terminal
	JSON                // one versioned document (docs/json.md)
	HTML                // one self-contained page
	PProf               // a gzipped pprof profile
)

func (f Format) String() string {
	switch f {
	case Text:
		return "text"
	case JSON:
		return "json"
	case HTML:
		return "html"
	case PProf:
		return "pprof"
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// Result is what one command found, ready to write: a value of one of this
// package's result types (Summary, Peak, Leaks, Frag, OOMs, Diff, Check, Ops,
// Page, Profile…). Each type has the forms its command offers; Write refuses
// the others.
type Result interface {
	// Kind names the result, as the "kind" of its JSON document.
	Kind() string
}

// The forms a result type may have. A result with a fileEntry form is one
// input file's part of a document whose "files" list holds one entry per
// result; a result with a document form is the whole document.
type (
	texter     interface{ writeText(w io.Writer) error }
	documenter interface{ document() any }
	filer      interface{ fileEntry() any }
	htmler     interface{ writeHTML(w io.Writer) error }
	pprofer    interface{ writePProf(w io.Writer) error }
)

// Write writes one result in format f.
func Write(w io.Writer, f Format, r Result) error {
	rw := NewWriter(w, f)
	if err := rw.Write(r); err != nil {
		return err
	}
	return rw.Close()
}

// A Writer writes a run of results of one kind, typically one per input
// file, as one output: in text, one after another with a blank line between
// them; in JSON, one document whose "files" list holds each result's entry.
// Each result is written (text) or reduced to its JSON entry (JSON) when it
// is given, so a command over many snapshots holds one analysis at a time.
type Writer struct {
	w     io.Writer
	f     Format
	kind  string
	n     int   // results written
	files []any // JSON: the entries of "files"
}

// NewWriter returns a Writer of format f to w. Close it to finish the output.
func NewWriter(w io.Writer, f Format) *Writer { return &Writer{w: w, f: f} }

// ErrNoForm is wrapped by the error Write returns for a result that has no
// form in the format asked for.
var ErrNoForm = errors.New("no such form")

// Write writes r, or keeps its part of the JSON document for Close.
func (rw *Writer) Write(r Result) error {
	if rw.n > 0 && r.Kind() != rw.kind {
		return fmt.Errorf("report: a %s result after a %s result: a Writer writes results of one kind", r.Kind(), rw.kind)
	}
	noForm := fmt.Errorf("report: a %s result has no %s form: %w", r.Kind(), rw.f, ErrNoForm)
	first := rw.n == 0
	rw.kind = r.Kind()
	rw.n++
	switch rw.f {
	case Text:
		t, ok := r.(texter)
		if !ok {
			return noForm
		}
		if !first {
			if _, err := io.WriteString(rw.w, "\n"); err != nil {
				return err
			}
		}
		return t.writeText(rw.w)
	case JSON:
		if fe, ok := r.(filer); ok {
			rw.files = append(rw.files, fe.fileEntry())
			return nil
		}
		d, ok := r.(documenter)
		if !ok {
			return noForm
		}
		if !first {
			return fmt.Errorf("report: a %s result is a whole JSON document: write one", r.Kind())
		}
		return writeJSON(rw.w, d.document())
	case HTML:
		if h, ok := r.(htmler); ok && first {
			return h.writeHTML(rw.w)
		}
	case PProf:
		if p, ok := r.(pprofer); ok && first {
			return p.writePProf(rw.w)
		}
	}
	return noForm
}

// Close finishes the output: in JSON, it writes the document of the files'
// entries.
func (rw *Writer) Close() error {
	if rw.f != JSON || rw.files == nil {
		return nil
	}
	return writeJSON(rw.w, FilesDoc[any]{Schema: Schema, Kind: rw.kind, Files: rw.files})
}

// FilesDoc is jsondoc.FilesDoc.
type FilesDoc[T any] = jsondoc.FilesDoc[T]

// ResultDoc is the document of the commands that write one result about
// all their inputs (diff, check): the result under "result".
type ResultDoc[T any] struct {
	Schema string `json:"schema"`
	Kind   string `json:"kind"`
	Result T      `json:"result"`
}
