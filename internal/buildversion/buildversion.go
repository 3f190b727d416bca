// Package buildversion says which memscope this is: the version a release
// build set, else the module version it was built at (go install
// …@v1.2.3), or "devel" with the VCS revision when known.
package buildversion

import "runtime/debug"

// String is set, when not empty (the wheel build's -ldflags -X), else the
// version this binary's build information records (Of).
func String(set string) string {
	if set != "" {
		return set
	}
	return Of(debug.ReadBuildInfo())
}

// Of is the version bi records: its main module's version, else "devel"
// with the first 12 digits of its VCS revision (and ", modified" for a
// modified tree), else "devel".
func Of(bi *debug.BuildInfo, ok bool) string {
	if !ok || bi == nil {
		return "devel"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev == "" {
		return "devel"
	}
	rev = rev[:min(len(rev), 12)]
	if modified == "true" {
		rev += ", modified"
	}
	return "devel (" + rev + ")"
}
