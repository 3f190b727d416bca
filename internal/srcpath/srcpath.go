// Package srcpath owns the names of source files as memscope reads and
// shows them: the normalised name a frame is matched by (Norm), the name a
// label shows (Show), the one rule that fits a label to a column (Clip),
// and the rewriting of paths to neutral prefixes for sharing (Neutral).
//
// A frame's file comes from the machine that recorded it: a Linux venv
// (/home/me/proj/.venv/lib/python3.12/site-packages/torch/…), conda, a
// Windows install (C:\Users\me\…\Lib\site-packages\…), or a file written
// by memscope capture with neutral prefixes (<site-packages>/…,
// <python>/…, <repo>/…). Every function here reads all of them alike, and
// none touches the file system: the paths are another machine's.
package srcpath

import (
	"regexp"
	"strings"
)

// SitePackages starts the normalised name of a file in an installed
// package, as the fixtures' neutral paths are written.
const SitePackages = "<site-packages>/"

// Python starts the neutral name of a file of the standard library.
const Python = "<python>/"

// Stdlib matches the start of a normalised name (see Norm) of a file of
// the standard library, up to the folder its modules are in: <python>/ in
// the fixtures, lib/python3.X/ on Linux and macOS, PythonXY\Lib\
// (python.org, the Store, uv, pyenv-win, conda) on Windows. Installed
// packages under it are normalised to SitePackages first.
var Stdlib = strings.Join(stdlibAlts, "|")

var stdlibAlts = []string{
	`^<python>/`,
	`(^|/)lib(64)?/python3[.0-9]*t?/`,
	`(^|/)(python3[0-9]*t?|cpython-3[^/]*|pythonsoftwarefoundation\.python\.3[^/]*|anaconda3|miniconda3|miniforge3|mambaforge)/(envs/[^/]+/)?lib/`,
	`(^|/)pyenv-win/versions/[^/]+/lib/`,
}

var stdlibREs = func() []*regexp.Regexp {
	var out []*regexp.Regexp
	for _, a := range stdlibAlts {
		out = append(out, regexp.MustCompile(a))
	}
	return out
}()

// stdlibEnd is the index in p ('/' separators) just after the folder of
// the standard library's modules, -1 when p is not in one: the latest
// end of any of Stdlib's alternatives, so that conda's
// anaconda3/envs/x/lib/python3.11/ ends after python3.11/.
func stdlibEnd(p string) int {
	lower := lowerSame(p)
	end := -1
	for _, re := range stdlibREs {
		if loc := re.FindStringIndex(lower); loc != nil {
			end = max(end, loc[1])
		}
	}
	return end
}

// Norm is the name a frame's file is matched by: '/' separators, no drive
// letter, lower case for a Windows path (its file system ignores case),
// and everything up to the last site-packages or dist-packages folder
// written "<site-packages>/", as the fixtures' neutral paths are.
//
//	D:\proj\.venv\Lib\site-packages\torch\functional.py  → <site-packages>/torch/functional.py
//	/usr/lib/python3/dist-packages/timm/models/vit.py     → <site-packages>/timm/models/vit.py
//	C:\Users\me\AppData\Local\Temp\torchinductor_me\x.py → /users/me/appdata/local/temp/torchinductor_me/x.py
func Norm(name string) string {
	p := name
	drive := hasDrive(p)
	if drive || strings.IndexByte(p, '\\') >= 0 {
		p = strings.ToLower(strings.ReplaceAll(p, `\`, "/"))
		if drive {
			p = p[2:]
		}
	}
	if strings.HasPrefix(p, SitePackages) {
		return p
	}
	if cut := siteCut(p); cut >= 0 {
		return SitePackages + p[cut:]
	}
	return p
}

// hasDrive reports whether p starts with a Windows drive letter ("C:").
func hasDrive(p string) bool {
	return len(p) >= 2 && p[1] == ':' && ('a' <= p[0]|0x20 && p[0]|0x20 <= 'z')
}

// siteCut is the index in p ('/' separators) just after its last
// site-packages or dist-packages folder, -1 when it has none. The folder
// is matched in any case (Windows writes Lib\site-packages).
func siteCut(p string) int {
	lower := lowerSame(p)
	cut := -1
	for _, dir := range []string{"site-packages/", "dist-packages/"} {
		if i := strings.LastIndex(lower, dir); i >= 0 && (i == 0 || p[i-1] == '/') {
			cut = max(cut, i+len(dir))
		}
	}
	return cut
}

// Show is how a frame's file is named in every label, text, HTML, JSON
// and serve alike: a file of an installed package or of the standard
// library relative to the folder it is imported from, any other file (the
// user's own: <repo>/train.py, ./train.py, /abs/path/train.py) as given,
// with '/' separators.
//
//	/home/me/.venv/lib/python3.12/site-packages/transformers/activations.py → transformers/activations.py
//	<site-packages>/transformers/integrations/sdpa_attention.py           → transformers/integrations/sdpa_attention.py
//	/usr/lib/python3.12/contextlib.py                                      → contextlib.py
//	C:\Users\me\proj\.venv\Lib\site-packages\torch\nn\modules\linear.py   → torch/nn/modules/linear.py
//	<repo>/train.py                                                        → <repo>/train.py
func Show(name string) string {
	if name == "" || strings.HasPrefix(name, "<") && !strings.HasPrefix(name, SitePackages) && !strings.HasPrefix(name, Python) {
		return name // <repo>/…, <memscope>/…, <frozen runpy>, <string>
	}
	p := strings.ReplaceAll(name, `\`, "/")
	if hasDrive(p) {
		p = p[2:]
	}
	if strings.HasPrefix(p, SitePackages) {
		return p[len(SitePackages):]
	}
	if cut := siteCut(p); cut >= 0 && cut < len(p) {
		return p[cut:]
	}
	if end := stdlibEnd(p); end >= 0 && end < len(p) {
		return p[end:]
	}
	return strings.ReplaceAll(name, `\`, "/")
}

// lowerSame is p in lower case where that keeps every byte where it is
// (it does for ASCII), else p: indexes into it are indexes into p.
func lowerSame(p string) string {
	if l := strings.ToLower(p); len(l) == len(p) {
		return l
	}
	return p
}
