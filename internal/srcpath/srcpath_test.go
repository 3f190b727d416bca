package srcpath

import (
	"encoding/json"
	"os/exec"
	"testing"

	"github.com/memscope/memscope/internal/testenv"
)

func TestShow(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		// The two labels of issue 31, absolute and neutral alike.
		{"/home/me/proj/.venv/lib/python3.12/site-packages/transformers/activations.py", "transformers/activations.py"},
		{"<site-packages>/transformers/integrations/sdpa_attention.py", "transformers/integrations/sdpa_attention.py"},
		{"<site-packages>/transformers/activations.py", "transformers/activations.py"},
		{"/home/me/proj/.venv/lib/python3.12/site-packages/transformers/integrations/sdpa_attention.py", "transformers/integrations/sdpa_attention.py"},
		{"/usr/lib/python3/dist-packages/timm/models/vit.py", "timm/models/vit.py"},
		{`C:\Users\me\proj\.venv\Lib\site-packages\torch\nn\modules\linear.py`, "torch/nn/modules/linear.py"},
		// The standard library.
		{"/usr/lib/python3.12/contextlib.py", "contextlib.py"},
		{"/opt/conda/lib/python3.10/json/decoder.py", "json/decoder.py"},
		{"<python>/threading.py", "threading.py"},
		{`C:\Python312\Lib\runpy.py`, "runpy.py"},
		// The user's own files, as given.
		{"<repo>/train.py", "<repo>/train.py"},
		{"/home/me/proj/train.py", "/home/me/proj/train.py"},
		{"train.py", "train.py"},
		{`C:\Users\me\proj\train.py`, "C:/Users/me/proj/train.py"},
		{"<memscope>/harness.py", "<memscope>/harness.py"},
		{"<frozen runpy>", "<frozen runpy>"},
		{"??", "??"},
		{"", ""},
		// A folder and nothing under it stays whole.
		{"/x/site-packages/", "/x/site-packages/"},
	} {
		if got := Show(tc.in); got != tc.want {
			t.Errorf("Show(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestNorm(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`D:\proj\.venv\Lib\site-packages\torch\functional.py`, "<site-packages>/torch/functional.py"},
		{"/usr/lib/python3/dist-packages/timm/models/vit.py", "<site-packages>/timm/models/vit.py"},
		{`C:\Users\me\AppData\Local\Temp\torchinductor_me\x.py`, "/users/me/appdata/local/temp/torchinductor_me/x.py"},
		{"<site-packages>/torch/nn/modules/module.py", "<site-packages>/torch/nn/modules/module.py"},
		{"/home/u/train.py", "/home/u/train.py"},
	} {
		if got := Norm(tc.in); got != tc.want {
			t.Errorf("Norm(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestClip(t *testing.T) {
	const sdpa = "transformers/integrations/sdpa_attention.py:96 sdpa_attention_forward"
	const called = "transformers/activations.py:78 forward (called from /home/me/proj/train.py:202 main)"
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{sdpa, 100, sdpa},
		{sdpa, len(sdpa), sdpa},
		{sdpa, 60, "…/integrations/sdpa_attention.py:96 sdpa_attention_forward"},
		{sdpa, 50, "…/sdpa_attention.py:96 sdpa_attention_forward"},
		{sdpa, 30, "…/sdpa_attention.py:96 sdpa_a…"},
		// The file and line are never cut: the first is kept whole past n.
		{sdpa, 10, "…/sdpa_attention.py:96…"},
		// The longest directory loses a folder first: the caller's absolute
		// one (its root with its first folder), then the library's.
		{called, 80, "transformers/activations.py:78 forward (called from …/me/proj/train.py:202 main)"},
		{called, 70, "…/activations.py:78 forward (called from …/me/proj/train.py:202 main)"},
		{called, 61, "…/activations.py:78 forward (called from …/train.py:202 main)"},
		{called, 60, "…/activations.py:78 forward (called from …/train.py:202 mai…"},
		// A cut never falls in a later file: it ends before it.
		{called, 45, "…/activations.py:78 forward (called from …"},
		// An input path loses its folders, never its name.
		{"/home/me/runs/2024-01-01/snapshot.pickle", 30, "…/2024-01-01/snapshot.pickle"},
		{"/home/me/runs/2024-01-01/snapshot.pickle", 10, "…/snapshot.pickle"},
		// Other text keeps its end, as before.
		{"aten::scaled_dot_product_attention", 12, "…t_attention"},
		// Control characters are escaped first.
		{"a\x1bb.py:1 f", 40, `a\x1bb.py:1 f`},
	} {
		got := Clip(tc.in, tc.n)
		if got != tc.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

func TestNeutral(t *testing.T) {
	nr := Neutral{Home: "/home/me", WorkDir: "/home/me/proj"}
	for _, tc := range []struct{ in, want string }{
		{"/home/me/proj/.venv/lib/python3.12/site-packages/transformers/activations.py", "<site-packages>/transformers/activations.py"},
		{"/usr/lib/python3.12/contextlib.py", "<python>/contextlib.py"},
		{"/home/me/.pyenv/versions/3.12.4/lib/python3.12/json/decoder.py", "<python>/json/decoder.py"},
		{"/home/me/proj/train.py", "./train.py"},
		{"/home/me/proj", "."},
		{"/home/me/data/snapshot.pickle", "<home>/data/snapshot.pickle"},
		{"/home/mex/train.py", "<home>/train.py"}, // another user: the pattern
		{"/Users/ann/work/train.py", "<home>/work/train.py"},
		{"/root/train.py", "<home>/train.py"},
		{`C:\Users\ann\proj\train.py`, "<home>/proj/train.py"},
		{`C:\Users\ann\proj\.venv\Lib\site-packages\torch\nn\functional.py`, "<site-packages>/torch/nn/functional.py"},
		{"/workspace/train.py", "/workspace/train.py"},
		{"fixtures/x.pickle", "fixtures/x.pickle"},
		{"<repo>/train.py", "<repo>/train.py"},
		{"<site-packages>/torch/nn/modules/module.py", "<site-packages>/torch/nn/modules/module.py"},
		{"??", "??"},
	} {
		if got := nr.Path(tc.in); got != tc.want {
			t.Errorf("Neutral.Path(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := (Neutral{}).Path("/srv/me/train.py"); got != "/srv/me/train.py" {
		t.Errorf("Neutral{}.Path(/srv/me/train.py) = %q, want it unchanged", got)
	}
}

func TestNeutralFiles(t *testing.T) {
	nr := Neutral{Home: "/home/me", WorkDir: "/home/me/proj"}
	files := []string{
		"/mnt/data3/ann/proj/src/train/models.py",
		"/mnt/data3/ann/proj/src/train/trainers.py",
		"/mnt/data3/ann/proj/src/start_train.py",
		"/home/ann/anaconda3/envs/gnn/lib/python3.11/threading.py",
		"/home/ann/anaconda3/envs/gnn/lib/python3.11/site-packages/torch/nn/modules/module.py",
		"/usr/include/c++/11/bits/shared_ptr.h", // not Python: no part in the common folder
		"??",
	}
	rename := nr.Files(files)
	for _, tc := range []struct{ in, want string }{
		{files[0], "<repo>/train/models.py"},
		{files[2], "<repo>/start_train.py"},
		{files[3], "<python>/threading.py"},
		{files[4], "<site-packages>/torch/nn/modules/module.py"},
		{files[5], "/usr/include/c++/11/bits/shared_ptr.h"},
		{"/mnt/data3/ann/proj/src/data.csv", "<repo>/data.csv"}, // under the folder, not in files
		{"??", "??"},
	} {
		if got := rename(tc.in); got != tc.want {
			t.Errorf("Files(…)(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	// Files with nothing in common but the root keep their paths.
	rename = nr.Files([]string{"/opt/a/x.py", "/srv/b/y.py"})
	if got := rename("/opt/a/x.py"); got != "/opt/a/x.py" {
		t.Errorf("Files(/opt/a/x.py, /srv/b/y.py)(/opt/a/x.py) = %q, want it unchanged", got)
	}
	// A Windows user's files, the drive's folder in common.
	rename = nr.Files([]string{`D:\Dev\a2\cs336_basics\model.py`, `D:\Dev\a2\cs336_systems\bench.py`})
	if got := rename(`D:\Dev\a2\cs336_basics\model.py`); got != "<repo>/cs336_basics/model.py" {
		t.Errorf("Files(Windows)(model.py) = %q, want <repo>/cs336_basics/model.py", got)
	}
}

// TestNeutralAsCapture holds Neutral to capture's rules (harness.py's
// path_rules and rewrite_path) on the prefixes both know: what the harness
// rewrites with the machine's own folders, Neutral rewrites from the path
// alone. (The harness writes the script's folder <repo>/; reading, only
// the working directory is known, and it becomes ./.)
func TestNeutralAsCapture(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		testenv.Need(t, "python3 not found")
	}
	paths := []string{
		"/opt/venv/lib/python3.12/site-packages/torch/nn/modules/linear.py",
		"/home/u/.venv/lib/python3.11/site-packages/transformers/models/llama/modeling_llama.py",
		"/usr/lib/python3.12/contextlib.py",
		"/usr/lib/python3.12/json/decoder.py",
		"/home/u/.venv/lib/python3.11/site-packages/torch/utils/checkpoint.py",
		"??",
		"/elsewhere/x.py",
	}
	in, _ := json.Marshal(paths)
	script := `import json, sys
sys.path.insert(0, "../../capture")
import harness
rules = harness.path_rules(None, ["/opt/venv/lib/python3.12/site-packages", "/home/u/.venv/lib/python3.11/site-packages"], ["/usr/lib/python3.12"])
print(json.dumps([harness.rewrite_path(p, rules) for p in json.loads(sys.argv[1])]))`
	out, err := exec.Command(py, "-c", script, string(in)).Output()
	if err != nil {
		t.Fatalf("python3 harness rules: %v", err)
	}
	var want []string
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatalf("python3 harness rules: %v: %s", err, out)
	}
	for i, p := range paths {
		if got := (Neutral{}).Path(p); got != want[i] {
			t.Errorf("Neutral.Path(%q) = %q, harness.rewrite_path = %q", p, got, want[i])
		}
	}
}
