// This file holds the rule that decides, frame by frame, where the user's
// answer is: which frames are plumbing to fold, which are model code in a
// library, and which are the user's own.

package attribution

import (
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/memscope/memscope/internal/srcpath"
	"github.com/memscope/memscope/snapshot"
)

// FrameClass is what the rule makes of one frame.
type FrameClass uint8

const (
	// FrameFolded is plumbing, never a site: C++ and other native frames,
	// and Python frames whose normalised file matches the ignore list
	// (DefaultIgnore: torch, the standard library, generated and frozen
	// code, memscope's harness, training loops and their strategies).
	FrameFolded FrameClass = iota
	// FrameLibrary is code in an installed package (a site-packages or
	// dist-packages folder) that the ignore list leaves alone: model code
	// such as transformers' modeling files, timm, diffusers, or the user's
	// own package installed there.
	FrameLibrary
	// FrameUser is every other Python frame: the user's scripts and
	// packages.
	FrameUser
)

func (c FrameClass) String() string {
	switch c {
	case FrameLibrary:
		return "library"
	case FrameUser:
		return "user"
	}
	return "folded"
}

// defaultIgnore lists what DefaultIgnore folds, one alternative a concern.
// Each is matched against the normalised file name (see normPath), so one
// pattern serves Linux, macOS and Windows paths and the fixtures' neutral
// prefixes alike, and an installed package is always "<site-packages>/pkg/…".
var defaultIgnore = []string{
	// torch itself, wherever it is installed, and the compilers under it:
	// nn.Module's _call_impl, autograd, _dynamo, _functorch, _inductor,
	// utils/checkpoint.py, optim, distributed, amp.
	`(^|/)(torch|functorch|triton)/`,
	// inductor's generated modules (/tmp/torchinductor_USER/…/HASH.py,
	// %TEMP%\torchinductor_USER\…): torch records the user's source line as
	// the next frame, and that is the site.
	`(^|/)torchinductor_[^/]*/`,
	// Kernel and einsum wrappers: the model line that calls them is the site.
	`^<site-packages>/(einops|opt_einsum|flash_attn|xformers)/`,
	// Training loops and strategies: the HF Trainer (its files, not its
	// models), accelerate, Lightning.
	`^<site-packages>/transformers/(trainer[^/]*|training_args)\.py$`,
	`^<site-packages>/transformers/(utils|data)/`,
	`^<site-packages>/(accelerate|lightning|pytorch_lightning|lightning_fabric)/`,
	// memscope's own harness: written to a temporary folder by capture,
	// <memscope>/ in the fixtures, the Python package once installed.
	`^<memscope>/|(^|/)memscope-harness-[^/]*/|^<site-packages>/memscope/`,
	// The standard library: <python>/ in the fixtures, lib/python3.X/ on
	// Linux and macOS, PythonXY\Lib\ (python.org, the Store, uv, pyenv-win,
	// conda) on Windows.
	srcpath.Stdlib,
	// Frozen modules and generated code: <frozen runpy>, <string>,
	// torch.fx's <eval_with_key>.N. (IPython cells and <stdin> are the
	// user's.)
	`^<(frozen[ >]|string>|eval_with_key>|__array_function__ internals>|decorator-gen-|makefun-gen-)`,
}

// DefaultIgnore is the ignore list used when none is given: the frames
// folded away as plumbing, matched against normalised file names. Installed
// packages it does not name are kept as library code.
var DefaultIgnore = strings.Join(defaultIgnore, "|")

// Filter is the rule that chooses each allocation's site. Every frame is
// put in one FrameClass, by its normalised file name (normPath):
//
//   - native frames are folded: every frame with no line or whose file is
//     neither Python source (".py") nor "<…>" code with no file (see
//     isPython): "??", C, C++, assembly (glibc's clone3.S), ".so";
//   - a Python frame whose file matches Ignore is folded (DefaultIgnore:
//     torch, the standard library, generated code, memscope's harness,
//     the HF Trainer, accelerate, Lightning);
//   - a frame in an installed package (site-packages, dist-packages) is
//     library code, kept: transformers' modeling_llama.py, timm, diffusers,
//     the user's own package installed there;
//   - every other Python frame is the user's.
//
// A frame counts for attribution when it is library or user code and, with
// Focus set, its file matches Focus. A stack's site is its innermost
// counted frame; when that is library code, the site also names the user
// frame that called into it (see SiteOf).
//
// The decisions are made once per frame and once per stack of each stack
// table the filter is used with (For), and kept: a Filter is safe for
// concurrent use, and holds the tables it has seen for as long as it lives.
type Filter struct {
	Ignore *regexp.Regexp // nil: fold only native frames
	Focus  *regexp.Regexp // nil: no focus
	// customIgnore is set when Ignore was given: it is then also tried on
	// the file name as recorded, as Focus always is.
	customIgnore bool

	mu     sync.Mutex
	tables map[*snapshot.Stacks]*SiteTable
}

// NewFilter compiles a filter; empty strings mean the default ignore list
// (DefaultIgnore) and no focus. A given ignore list replaces the default.
func NewFilter(ignore, focus string) (*Filter, error) {
	f := &Filter{customIgnore: ignore != ""}
	if ignore == "" {
		ignore = DefaultIgnore
	}
	var err error
	if f.Ignore, err = regexp.Compile(ignore); err != nil {
		return nil, fmt.Errorf("--ignore %q: %w", ignore, err)
	}
	if focus != "" {
		if f.Focus, err = regexp.Compile(focus); err != nil {
			return nil, fmt.Errorf("--focus %q: %w", focus, err)
		}
	}
	return f, nil
}

// Class applies the rule to one frame. It runs the regexps: callers with a
// stack table use For(st).Class, which decides each frame once.
func (f *Filter) Class(fr *snapshot.Frame) FrameClass {
	if !isPython(fr) {
		return FrameFolded
	}
	key := normPath(fr.Filename)
	if f.Ignore != nil && (f.Ignore.MatchString(key) || f.customIgnore && key != fr.Filename && f.Ignore.MatchString(fr.Filename)) {
		return FrameFolded
	}
	if strings.HasPrefix(key, sitePackages) {
		return FrameLibrary
	}
	return FrameUser
}

// Counts reports whether fr counts for attribution: library or user code,
// in focus.
func (f *Filter) Counts(fr *snapshot.Frame) bool {
	return f.Class(fr) != FrameFolded && f.inFocus(fr)
}

// FocusMatches reports whether the focus matches a frame of st that is
// not folded: when it matches none, every site falls back to its
// innermost Python frame, as if nothing counted. True without a focus.
func (f *Filter) FocusMatches(st *snapshot.Stacks) bool {
	if f.Focus == nil {
		return true
	}
	for i := range st.Frames {
		if fr := &st.Frames[i]; f.Class(fr) != FrameFolded && f.inFocus(fr) {
			return true
		}
	}
	return false
}

func (f *Filter) inFocus(fr *snapshot.Frame) bool {
	if f.Focus == nil {
		return true
	}
	if f.Focus.MatchString(fr.Filename) {
		return true
	}
	key := normPath(fr.Filename)
	return key != fr.Filename && f.Focus.MatchString(key)
}

// IsPython reports whether fr is a Python frame, not a native one (see
// isPython): what summary --stacks prints by default.
func IsPython(fr *snapshot.Frame) bool { return isPython(fr) }

// isPython reports whether fr is a Python frame: a line number, and a file
// that is Python source (".py", any case: Windows paths) or a name Python
// gives code with no file, "<…>" ("<string>", "<stdin>", "<frozen runpy>",
// torch.fx's "<eval_with_key>.3", IPython's "<ipython-input-3-…>"). Every
// other frame is native: with stacks="all" torch writes C and C++ frames as
// "??", "" or their source file (".cpp", ".c", ".h", ".cu"), assembly
// (glibc's "../sysdeps/unix/sysv/linux/x86_64/clone3.S" that starts the
// autograd thread), shared objects (".so.2", ".dll", ".pyd") and Cython
// (".pyx"), with a line when the debug information has one.
func isPython(fr *snapshot.Frame) bool {
	if fr.Line <= 0 {
		return false
	}
	name := fr.Filename
	if len(name) > 3 && strings.EqualFold(name[len(name)-3:], ".py") {
		return true
	}
	// "<frozen runpy>", "<eval_with_key>.3": nothing after the closing '>'
	// is a path (the fixtures' "<site-packages>/…" prefixes start so too).
	end := strings.IndexByte(name, '>')
	return strings.HasPrefix(name, "<") && end > 0 && !strings.ContainsAny(name[end:], `/\`)
}

// sitePackages starts the normalised name of a file in an installed package.
const sitePackages = srcpath.SitePackages

// normPath is the name a frame's file is matched by (srcpath.Norm): '/'
// separators, no drive letter, lower case for a Windows path, and
// everything up to the last site-packages or dist-packages folder written
// "<site-packages>/", as the fixtures' neutral paths are.
func normPath(name string) string { return srcpath.Norm(name) }
