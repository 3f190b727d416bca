package srcpath

import (
	"regexp"
	"strings"
)

// Home starts the neutral name of a file under a home directory.
const Home = "<home>/"

// Repo starts the neutral name of a user's file, as capture writes it.
const Repo = "<repo>/"

// Neutral rewrites paths to neutral prefixes, so that output shared in an
// issue does not show the layout of the machine that recorded the frames
// or of the one that read them: the rules of memscope capture's
// --neutral-paths (capture/harness.py's path_rules), for files already
// written without them.
//
//	…/site-packages/pkg/… and …/dist-packages/pkg/…   → <site-packages>/pkg/…
//	the standard library (…/lib/python3.12/…, Stdlib)  → <python>/…
//	WorkDir/…                                          → ./…
//	Home/…, /home/USER/…, /Users/USER/…, /root/…,
//	C:\Users\USER\…                                    → <home>/…
//
// Files reads a recording's files together: the user's Python files left
// absolute by those rules share a folder, and it becomes <repo>/, as
// capture writes the script's repository.
//
// The first rule that applies wins, in that order: a venv under the
// working directory is still <site-packages>/, and the working directory
// is ./ even under the home directory. Names that are already neutral
// (<repo>/…, <frozen runpy>), relative paths and other absolute ones are
// left as they are. Windows paths come out with '/' separators.
type Neutral struct {
	// Home and WorkDir are this machine's home and working directories
	// (os.UserHomeDir, os.Getwd), "" for none: their own paths are
	// rewritten whatever they look like.
	Home, WorkDir string
}

// homeRE matches a home directory on another machine, with '/' separators.
var homeRE = regexp.MustCompile(`^(/home/[^/]+/|/Users/[^/]+/|/root/|/var/home/[^/]+/|[A-Za-z]:/[Uu][Ss][Ee][Rr][Ss]/[^/]+/)`)

// Path is p with its machine's prefix rewritten (see Neutral).
func (nr Neutral) Path(p string) string {
	if p == "" || strings.HasPrefix(p, "<") {
		return p
	}
	s := strings.ReplaceAll(p, `\`, "/")
	if cut := siteCut(s); cut >= 0 {
		return SitePackages + s[cut:]
	}
	if end := stdlibEnd(s); end >= 0 {
		return Python + s[end:]
	}
	if rest, ok := under(s, nr.WorkDir); ok {
		if rest == "" {
			return "."
		}
		return "./" + rest
	}
	if rest, ok := under(s, nr.Home); ok {
		return Home + rest
	}
	if loc := homeRE.FindStringIndex(s); loc != nil {
		return Home + s[loc[1]:]
	}
	return s
}

// under reports whether p is dir or inside it, and the rest of p after it.
func under(p, dir string) (string, bool) {
	dir = strings.TrimRight(strings.ReplaceAll(dir, `\`, "/"), "/")
	if dir == "" {
		return "", false
	}
	if p == dir {
		return "", true
	}
	if strings.HasPrefix(p, dir+"/") {
		return p[len(dir)+1:], true
	}
	return "", false
}

// Files returns the rewriting of one recording's file names: Path, and
// then the folder that the absolute Python files left by it have in
// common (not the root) written <repo>/: /mnt/data3/ann/proj/src/train.py
// and /mnt/data3/ann/proj/src/models.py become <repo>/train.py and
// <repo>/models.py. The function is safe to call with names not in files.
func (nr Neutral) Files(files []string) func(string) string {
	root := ""
	first := true
	for _, f := range files {
		p := nr.Path(f)
		if !isAbs(p) || !strings.EqualFold(p[max(len(p)-3, 0):], ".py") {
			continue
		}
		dir := p[:strings.LastIndexByte(p, '/')+1]
		if first {
			root, first = dir, false
			continue
		}
		for !strings.HasPrefix(dir, root) {
			root = root[:strings.LastIndexByte(root[:len(root)-1], '/')+1]
		}
	}
	if strings.Count(root, "/") < 2 { // none, or the root: "/", "C:/"
		root = ""
	}
	return func(f string) string {
		p := nr.Path(f)
		if root != "" && strings.HasPrefix(p, root) {
			return Repo + p[len(root):]
		}
		return p
	}
}

// isAbs reports whether p, with '/' separators, is absolute on Linux,
// macOS or Windows.
func isAbs(p string) bool {
	return strings.HasPrefix(p, "/") || hasDrive(p) && len(p) > 2 && p[2] == '/'
}
