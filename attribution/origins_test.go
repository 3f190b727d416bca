package attribution

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// originFiles lists every real snapshot: the fixtures made with the
// harness and without it (plain-*, workloads/*, the sweeps' points, the
// what-if fixtures, gzipped), and the third-party files.
func originFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, g := range []string{"../fixtures/*/snapshot*.pickle", "../fixtures/*/*/snapshot*.pickle",
		"../fixtures/*/points/*/snapshot.pickle", "../fixtures/*/*/snapshot.pickle.gz", "../fixtures/*/snapshot.pickle.gz",
		"testdata/thirdparty/*.pickle.gz"} {
		m, err := filepath.Glob(g)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 60 {
		t.Fatalf("%d snapshots found, want the 60 and more fixtures and third-party files", len(files))
	}
	return files
}

// TestNamedOrigins: on every real snapshot, the peak's sites add up to
// the allocated peak exactly, at most a tenth of it sits in sites with no
// named origin ("(allocated before recording began)", "(no Python
// frame…)", "(no history recorded)"), and both call trees hold every
// allocated byte: peak --tree's (Moment.Tree) and the treemap's
// (UserTree), their root's children adding up to the root.
func TestNamedOrigins(t *testing.T) {
	for _, path := range originFiles(t) {
		name := strings.TrimPrefix(path, "../")
		an := fixtureAnalysisFile(t, path)
		for _, d := range an.Devices {
			m := d.Peak
			if m.Allocated == 0 {
				continue
			}
			var named, unnamed int64
			var worst []string
			for _, s := range m.Sites {
				if s.Site.Named() {
					named += s.Bytes
					continue
				}
				unnamed += s.Bytes
				worst = append(worst, s.Label)
			}
			if named+unnamed != m.Allocated {
				t.Errorf("%s device %d: named %d B + unnamed %d B = %d, want the peak's allocated %d", name, d.Device, named, unnamed, named+unnamed, m.Allocated)
			}
			if 10*unnamed > m.Allocated {
				t.Errorf("%s device %d: %d B of the peak's %d (%.1f%%) in sites with no named origin %q, want at most 10%%",
					name, d.Device, unnamed, m.Allocated, 100*float64(unnamed)/float64(m.Allocated), worst)
			}
			var kids int64
			for _, c := range m.Tree.Children {
				kids += c.Bytes
			}
			if m.Tree.Bytes != m.Allocated || kids != m.Allocated {
				t.Errorf("%s device %d: call tree root %d B, its children %d B, want the peak's allocated %d", name, d.Device, m.Tree.Bytes, kids, m.Allocated)
			}
			ut := d.UserTree(m, 0.01, 64)
			kids = 0
			for _, c := range ut.Children {
				kids += c.Bytes
			}
			if ut.Bytes != m.Allocated || kids != m.Allocated {
				t.Errorf("%s device %d: UserTree root %d B, its children %d B, want the peak's allocated %d", name, d.Device, ut.Bytes, kids, m.Allocated)
			}
		}
	}
}

// TestBackwardOfLogits: in the Llama fixtures whose peak is the loss's
// backward, what the issue found in "(no Python frame…)" is the logits'
// fp32 gradients: two blocks of torch's batch × seq × vocab × 4 bytes
// (truth.json's logits_bytes_fp32), the log-softmax's gradient and the
// upcast logits'. Each is named by the forward line that made the tensor
// it is the gradient of: the harness's cross_entropy line (truth.json's
// sites), or transformers' loss (loss_utils.py) called from the
// training script.
func TestBackwardOfLogits(t *testing.T) {
	for _, tc := range []struct {
		dir  string
		want []string // the backward sites' frames, file suffix and line
	}{
		{"llama-bf16", nil},
		{"llama-wide", nil},
		{"llama-ckpt", nil},
		{"llama-profiled", nil},
		{"advise/train-none", []string{"transformers/loss/loss_utils.py:40", "transformers/loss/loss_utils.py:59"}},
		{"advise/train-checkpointing", []string{"transformers/loss/loss_utils.py:40", "transformers/loss/loss_utils.py:59"}},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			dir := filepath.Join("../fixtures", tc.dir)
			tr := readTruth(t, dir)
			if tc.want == nil {
				ce := tr.Sites["cross_entropy"]
				line := ce.File + ":" + strconv.FormatInt(ce.Line, 10)
				tc.want = []string{line, line}
			}
			d := fixtureAnalysis(t, dir).Primary()
			st := d.an.Snapshot.Stacks
			L := tr.LogitsBytesFP32
			var got []string
			var bytes int64
			for i := range d.Peak.Live {
				b := &d.Peak.Live[i]
				if b.PendingFree || b.Requested != L {
					continue
				}
				if phase, _ := d.PhaseOf(b.AllocIndex); phase != "backward" {
					continue
				}
				s := d.SiteOfBlock(b)
				if s.Kind != SiteBackward {
					t.Errorf("a %d B block the backward allocated is %q, want a backward site", b.Size, s.Label(st))
					continue
				}
				fr := st.Frame(s.Frame)
				got = append(got, fr.Filename+":"+strconv.FormatInt(fr.Line, 10))
				bytes += b.Requested
			}
			if bytes != 2*L || len(got) != len(tc.want) {
				t.Fatalf("the backward's logits-sized blocks at the peak: %d B at %q, want 2 × %d B (torch's fp32 logits)", bytes, got, L)
			}
			for i, w := range tc.want {
				found := false
				for _, g := range got {
					found = found || strings.HasSuffix(g, w)
				}
				if !found {
					t.Errorf("backward sites %q, want %q among them (%d)", got, w, i)
				}
			}
		})
	}
}

// TestCuBLASWorkspaceSites: with stacks="all" (fixtures/stacks-all,
// plain-sgd-leak, the plain-torch Llama capture whatif-train-stacks-all,
// and every other real snapshot), the blocks whose stack
// holds cuBLAS making a handle's workspace (at::cuda::setWorkspaceForHandle,
// and cuBLASLt's, getCUDABlasLtWorkspace) are the cuBLAS sites at the peak, byte for byte: named, labelled as the
// workspace, the forward's by the line of the first matmul and the
// backward's as the autograd engine's; no other site is one. The three
// fixtures recorded with C++ frames each have both.
func TestCuBLASWorkspaceSites(t *testing.T) {
	withFrames := 0
	for _, path := range originFiles(t) {
		an := fixtureAnalysisFile(t, path)
		st := an.Snapshot.Stacks
		for _, d := range an.Devices {
			var want int64
			for _, b := range d.Peak.Live {
				for _, f := range st.Stack(b.Stack) {
					if n := st.Frame(f).Name; strings.Contains(n, "setWorkspaceForHandle") || strings.Contains(n, "getCUDABlasLtWorkspace") {
						want += b.Size
						break
					}
				}
			}
			var got int64
			kinds := map[string]bool{}
			for _, s := range d.Peak.Sites {
				if !s.Site.CuBLAS {
					if strings.Contains(s.Label, "cuBLAS workspace (") && !strings.Contains(s.Label, "by its size") {
						t.Errorf("%s: site %q reads as a workspace but is not one", path, s.Label)
					}
					continue
				}
				got += s.Bytes
				kinds[s.Site.Kind] = true
				if !s.Site.Named() || !strings.Contains(s.Label, "cuBLAS workspace") {
					t.Errorf("%s: cuBLAS site %q (named %v)", path, s.Label, s.Site.Named())
				}
			}
			if got != want {
				t.Errorf("%s device %d: cuBLAS sites hold %d bytes at the peak, the workspace stacks' blocks %d", path, d.Device, got, want)
			}
			if want > 0 {
				withFrames++
				if !kinds[SiteNone] || len(kinds) < 2 {
					t.Errorf("%s: cuBLAS sites of kinds %v; want the forward's and the autograd engine's", path, kinds)
				}
			}
		}
	}
	if withFrames < 3 {
		t.Errorf("%d devices hold cuBLAS workspaces with C++ frames at the peak, want stacks-all's, plain-sgd-leak's and whatif-train-stacks-all's", withFrames)
	}
}
