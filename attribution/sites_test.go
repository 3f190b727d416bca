package attribution

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/memscope/memscope/snapshot"
)

// windowsPaths rewrites every frame's file of s as the same capture made on
// Windows would have it: the fixtures' neutral prefixes become a venv,
// a project, a python.org install and capture's temporary folder, and
// every '/' a '\'.
func windowsPaths(s *snapshot.Snapshot) {
	prefixes := []struct{ neutral, win string }{
		{"<site-packages>/", `C:\Users\me\proj\.venv\Lib\site-packages\`},
		{"<repo>/", `C:\Users\me\proj\`},
		{"<python>/", `C:\Python312\Lib\`},
		{"<memscope>/", `C:\Users\me\AppData\Local\Temp\memscope-harness-4242\`},
	}
	for i := range s.Stacks.Frames {
		fr := &s.Stacks.Frames[i]
		for _, p := range prefixes {
			if rest, ok := strings.CutPrefix(fr.Filename, p.neutral); ok {
				fr.Filename = p.win + strings.ReplaceAll(rest, "/", `\`)
				break
			}
		}
	}
}

// siteKey is a site as the tests compare it across path spellings: kind,
// the lines and functions of frame and caller, and what it holds.
type siteKey struct {
	kind             string
	line, callerLine int64
	name, callerName string
	base, callerBase string
	bytes, requested int64
	blocks           int
}

func keyOf(st *snapshot.Stacks, s SiteBytes) siteKey {
	k := siteKey{kind: s.Site.Kind, bytes: s.Bytes, requested: s.Requested, blocks: s.Count}
	switch s.Site.Kind {
	case SiteUser, SiteLibrary, SitePython:
		fr := st.Frame(s.Site.Frame)
		k.line, k.name, k.base = fr.Line, fr.Name, strings.ToLower(FileBase(fr.Filename))
	}
	if s.Site.HasCaller {
		c := st.Frame(s.Site.Caller)
		k.callerLine, k.callerName, k.callerBase = c.Line, c.Name, strings.ToLower(FileBase(c.Filename))
	}
	return k
}

// TestWindowsPathsSameSites: a fixture whose frame paths are rewritten the
// Windows way (backslashes, drive letters, Lib\site-packages, PythonXY\Lib)
// gives the same sites, with the same lines, functions and bytes, at the
// peak, at the end and for the leak.
func TestWindowsPathsSameSites(t *testing.T) {
	for _, name := range []string{"llama-bf16", "stacks-all", "leak", "capture-train", "sweep-llama/points/bf16-b8-safe"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join("../fixtures", name, "snapshot.pickle")
			unix, err := snapshot.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			win, err := snapshot.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			windowsPaths(win)
			if got := win.Stacks.Frames[0].Filename; got == unix.Stacks.Frames[0].Filename && strings.Contains(got, "/") {
				t.Fatalf("frame paths not rewritten: %q", got)
			}
			a, b := Analyze(unix, Options{Device: -1}), Analyze(win, Options{Device: -1})
			for i, da := range a.Devices {
				db := b.Devices[i]
				for _, c := range []struct {
					what   string
					sa, sb []SiteBytes
				}{
					{"peak", da.Peak.Sites, db.Peak.Sites},
					{"end", da.End.Sites, db.End.Sites},
					{"leak", leakSites(da), leakSites(db)},
				} {
					if len(c.sa) != len(c.sb) {
						t.Fatalf("%s: %d sites with Linux paths, %d with Windows paths", c.what, len(c.sa), len(c.sb))
					}
					for j := range c.sa {
						ka, kb := keyOf(unix.Stacks, c.sa[j]), keyOf(win.Stacks, c.sb[j])
						if ka != kb {
							t.Errorf("%s site %d = %+v (%s) with Windows paths, want %+v (%s)", c.what, j, kb, c.sb[j].Label, ka, c.sa[j].Label)
						}
					}
				}
			}
		})
	}
}

func leakSites(d *Device) []SiteBytes {
	var out []SiteBytes
	for _, s := range d.Leak.Sites {
		out = append(out, s.SiteBytes)
	}
	return out
}

// TestLlamaModelSites: in llama-bf16 the harness calls the transformers
// model's body itself (model.model(...)) and then the output projection and
// the loss (the truth.json sites, user lines). Every block allocated inside
// the library is charged to the innermost line of transformers' model code
// in its stack (not transformers/utils' wrappers, not torch), with the
// harness line that called the model as its caller; the truth sites stay
// user sites.
func TestLlamaModelSites(t *testing.T) {
	for _, f := range loadFixtures(t) {
		if f.name != "llama-bf16" && f.name != "llama-profiled" && f.name != "llama-ckpt" && f.name != "llama-wide" {
			continue
		}
		t.Run(f.name, func(t *testing.T) {
			st := f.an.Snapshot.Stacks
			d := f.an.Devices[0]
			truthLine := map[int64]bool{}
			for _, s := range f.truth.Sites {
				truthLine[s.Line] = true
			}
			var library int64
			for _, b := range d.Peak.Live {
				if b.PendingFree || b.Stack == 0 {
					continue
				}
				var model, caller *snapshot.Frame
				var modelID snapshot.FrameID
				frames := st.Stack(b.Stack)
				for i, fid := range frames {
					fr := st.Frame(fid)
					if strings.HasPrefix(fr.Filename, "<site-packages>/transformers/") && !strings.HasPrefix(fr.Filename, "<site-packages>/transformers/utils/") {
						model, modelID = fr, fid
						for _, c := range frames[i+1:] {
							if cf := st.Frame(c); strings.HasPrefix(cf.Filename, "<repo>/") {
								caller = cf
								break
							}
						}
						break
					}
					if strings.HasPrefix(fr.Filename, "<repo>/") {
						break // a user frame before any model code
					}
				}
				site := f.an.Filter.SiteOf(st, b.Stack)
				if model == nil {
					if site.Kind == SiteLibrary {
						t.Errorf("block at %#x: library site %s outside transformers", b.Addr, site.Label(st))
					}
					continue
				}
				library += b.Size
				if site.Kind != SiteLibrary || site.Frame != modelID || !site.HasCaller || *st.Frame(site.Caller) != *caller {
					t.Errorf("block at %#x: site %s (%s), want %s (called from %s)", b.Addr, site.Label(st), site.Kind,
						FrameLabel(model), FrameLabel(caller))
				}
				if truthLine[caller.Line] {
					t.Errorf("block at %#x: model code called from a truth site %s", b.Addr, FrameLabel(caller))
				}
			}
			if library == 0 {
				t.Fatal("no block at the peak was allocated in transformers' model code")
			}
			users := 0
			for _, s := range d.Peak.Sites {
				if s.Site.Kind == SiteUser && truthLine[st.Frame(s.Site.Frame).Line] {
					users++
				}
			}
			if users == 0 {
				t.Errorf("no truth.json site (lm_head, cross_entropy) among the user sites at the peak")
			}
		})
	}
}

// TestSweepTopSiteIsModelLine: in the sweep's Llama the harness (folded:
// <memscope>/) calls the whole transformers model, so the largest site
// at the peak with a frame in the model is a line of modeling_llama.py.
func TestSweepTopSiteIsModelLine(t *testing.T) {
	s, err := snapshot.Open("../fixtures/sweep-llama/points/bf16-b8-safe/snapshot.pickle")
	if err != nil {
		t.Fatal(err)
	}
	an := Analyze(s, Options{Device: -1})
	for _, site := range an.Devices[0].Peak.Sites {
		if site.Site.Kind != SiteLibrary && site.Site.Kind != SiteUser {
			continue
		}
		fr := s.Stacks.Frame(site.Site.Frame)
		if site.Site.Kind != SiteLibrary || !strings.HasSuffix(fr.Filename, "/transformers/models/llama/modeling_llama.py") {
			t.Errorf("largest user or library site = %s (%s), want a line of modeling_llama.py", site.Label, site.Site.Kind)
		}
		return
	}
	t.Fatal("no user or library site at the peak")
}
