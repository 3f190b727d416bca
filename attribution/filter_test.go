package attribution

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/memscope/memscope/internal/units"
	"github.com/memscope/memscope/snapshot"
)

// Frames of the rule's cases, as "file:line function"; a stack lists them
// innermost first, as torch records it.
const (
	venv    = "/home/me/proj/.venv/lib/python3.12/site-packages/"
	winVenv = `C:\Users\me\proj\.venv\Lib\site-packages\`

	linear    = venv + "torch/nn/modules/linear.py:134 forward"
	callImpl  = venv + "torch/nn/modules/module.py:1790 _call_impl"
	wrapped   = venv + "torch/nn/modules/module.py:1779 _wrapped_call_impl"
	logits    = venv + "transformers/models/llama/modeling_llama.py:512 forward"
	hfWrapper = venv + "transformers/utils/generic.py:1068 wrapper"
	trainLine = "/home/me/proj/train.py:40 main"
	trainMod  = "/home/me/proj/train.py:90 <module>"

	winLinear   = winVenv + `torch\nn\modules\linear.py:134 forward`
	winCallImpl = winVenv + `torch\nn\modules\module.py:1790 _call_impl`
	winLogits   = winVenv + `transformers\models\llama\modeling_llama.py:512 forward`
	winTrain    = `C:\Users\me\proj\train.py:40 main`
)

// frameOf parses "file:line function" (the file may hold ':' after a drive
// letter); "name@file" with no line is a native frame.
func frameOf(t *testing.T, s string) snapshot.Frame {
	t.Helper()
	if name, file, ok := strings.Cut(s, "@"); ok {
		return snapshot.Frame{Name: name, Filename: file}
	}
	m := frameRE.FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("bad frame %q", s)
	}
	line, _ := strconv.ParseInt(m[2], 10, 64)
	return snapshot.Frame{Filename: m[1], Line: line, Name: m[3]}
}

var frameRE = regexp.MustCompile(`^(.*):([0-9]+) (.*)$`)

// TestSiteRule runs the rule on stacks of the shapes real snapshots have.
func TestSiteRule(t *testing.T) {
	for _, tt := range []struct {
		name          string
		ignore, focus string
		stack         []string // innermost first
		kind          string
		site, caller  string // "" for none
	}{
		{name: "HF logits in site-packages, called by the user's model(x)",
			stack: []string{linear, callImpl, wrapped, logits, hfWrapper, callImpl, wrapped, trainLine, trainMod},
			kind:  SiteLibrary, site: logits, caller: trainLine},
		{name: "HF logits, Windows paths",
			stack: []string{winLinear, winCallImpl, winLogits, winVenv + `transformers\utils\generic.py:1068 wrapper`, winTrain},
			kind:  SiteLibrary, site: winLogits, caller: winTrain},
		{name: "HF loss in transformers/loss",
			stack: []string{venv + "torch/nn/functional.py:3504 cross_entropy", venv + "transformers/loss/loss_utils.py:36 fixed_cross_entropy",
				venv + "transformers/loss/loss_utils.py:67 ForCausalLMLoss", logits, trainLine},
			kind: SiteLibrary, site: venv + "transformers/loss/loss_utils.py:36 fixed_cross_entropy", caller: trainLine},
		{name: "model called by the HF Trainer: the Trainer folds, the caller is the user's trainer.train()",
			stack: []string{linear, callImpl, logits, callImpl, venv + "accelerate/utils/operations.py:819 forward",
				venv + "transformers/trainer.py:3801 compute_loss", venv + "transformers/trainer.py:3745 training_step",
				venv + "transformers/trainer_utils.py:872 _inner", venv + "transformers/trainer.py:2206 train", trainLine},
			kind: SiteLibrary, site: logits, caller: trainLine},
		{name: "the Trainer's own allocation (the batch) is the user's trainer.train()",
			stack: []string{venv + "transformers/trainer.py:3620 _prepare_input", venv + "transformers/trainer.py:2206 train", trainLine},
			kind:  SiteUser, site: trainLine},
		{name: "Lightning loop around the user's LightningModule",
			stack: []string{linear, callImpl, "/home/me/proj/lit.py:20 training_step",
				venv + "lightning/pytorch/strategies/strategy.py:390 training_step",
				venv + "pytorch_lightning/loops/fit_loop.py:210 run", trainLine},
			kind: SiteUser, site: "/home/me/proj/lit.py:20 training_step"},
		{name: "timm",
			stack: []string{linear, callImpl, venv + "timm/models/vision_transformer.py:88 forward", callImpl, trainLine},
			kind:  SiteLibrary, site: venv + "timm/models/vision_transformer.py:88 forward", caller: trainLine},
		{name: "diffusers in Debian's dist-packages",
			stack: []string{"/usr/lib/python3/dist-packages/diffusers/models/unets/unet_2d_condition.py:1170 forward", trainLine},
			kind:  SiteLibrary, site: "/usr/lib/python3/dist-packages/diffusers/models/unets/unet_2d_condition.py:1170 forward", caller: trainLine},
		{name: "the user's own package installed in site-packages",
			stack: []string{linear, "/opt/conda/lib/python3.11/site-packages/mymodels/net.py:12 forward", callImpl, "/work/run.py:3 <module>"},
			kind:  SiteLibrary, site: "/opt/conda/lib/python3.11/site-packages/mymodels/net.py:12 forward", caller: "/work/run.py:3 <module>"},
		{name: "fixtures' neutral paths",
			stack: []string{"<site-packages>/torch/nn/modules/linear.py:134 forward", "<site-packages>/transformers/models/llama/modeling_llama.py:175 forward",
				"<memscope>/harness.py:400 run", "<repo>/train.py:12 main"},
			kind: SiteLibrary, site: "<site-packages>/transformers/models/llama/modeling_llama.py:175 forward", caller: "<repo>/train.py:12 main"},
		{name: "library called from the harness only: no caller",
			stack: []string{"<site-packages>/transformers/models/llama/modeling_llama.py:175 forward", "<memscope>/harness.py:400 run", "<frozen runpy>:88 _run_code"},
			kind:  SiteLibrary, site: "<site-packages>/transformers/models/llama/modeling_llama.py:175 forward"},
		{name: "inductor's generated module: the user's source line torch records next",
			stack: []string{"/tmp/torchinductor_me/ab/cabcdef0123.py:123 call", venv + "torch/_inductor/output_code.py:460 __call__",
				"/home/me/proj/model.py:30 forward", venv + "torch/_dynamo/eval_frame.py:1044 _fn", trainLine},
			kind: SiteUser, site: "/home/me/proj/model.py:30 forward"},
		{name: "inductor on Windows (%TEMP%)",
			stack: []string{`C:\Users\me\AppData\Local\Temp\torchinductor_me\ab\cabcdef0123.py:123 call`, `C:\Users\me\proj\model.py:30 forward`},
			kind:  SiteUser, site: `C:\Users\me\proj\model.py:30 forward`},
		{name: "activation checkpointing and autograd fold",
			stack: []string{linear, venv + "torch/utils/checkpoint.py:1590 recompute_fn", venv + "torch/autograd/graph.py:829 _engine_run_backward",
				venv + "torch/_functorch/aot_autograd.py:1201 forward", venv + "torch/_tensor.py:631 backward", trainLine},
			kind: SiteUser, site: trainLine},
		{name: "memscope's harness from a capture, the standard library and runpy",
			stack: []string{"/tmp/memscope-harness-81273/harness.py:612 hook", venv + "torch/optim/optimizer.py:516 wrapper",
				"/home/me/proj/train.py:55 main", "/usr/lib/python3.12/runpy.py:88 _run_code", "<frozen runpy>:198 _run_module_as_main",
				"/tmp/memscope-harness-81273/harness.py:1450 main"},
			kind: SiteUser, site: "/home/me/proj/train.py:55 main"},
		{name: "the standard library on Windows",
			stack: []string{`C:\Users\me\AppData\Local\Programs\Python\Python311\Lib\threading.py:1045 run`, `C:\Python312\Lib\concurrent\futures\thread.py:58 run`,
				`D:\proj\.venv\Lib\site-packages\torch\functional.py:402 einsum`, `D:\proj\worker.py:9 work`},
			kind: SiteUser, site: `D:\proj\worker.py:9 work`},
		{name: "plumbing only: the innermost Python frame",
			stack: []string{venv + "torch/optim/adam.py:182 _init_group", "<memscope>/harness.py:300 train_steps", "/usr/lib/python3.12/threading.py:1010 run"},
			kind:  SitePython, site: venv + "torch/optim/adam.py:182 _init_group"},
		{name: "C++ frames only (stacks=all, autograd thread)",
			stack: []string{"c10::cuda::CUDACachingAllocator::malloc@??", "at::native::empty_cuda@RegisterCUDA_0.cpp", "PyEval@/usr/lib/libpython3.12.so.1.0",
				"torch::autograd::Engine::thread_main@engine.cpp"},
			kind: SiteNone},
		{name: "C++ frames inside user code",
			stack: []string{"malloc@??", "at::empty@/pytorch/aten/src/ATen/native/TensorFactories.cpp", venv + "torch/nn/functional.py:2380 silu", "/home/me/proj/model.py:31 forward"},
			kind:  SiteUser, site: "/home/me/proj/model.py:31 forward"},
		{name: "torch.fx generated code and IPython cells",
			stack: []string{"<eval_with_key>.3:12 forward", "<ipython-input-3-abc>:2 <module>"},
			kind:  SiteUser, site: "<ipython-input-3-abc>:2 <module>"},
		{name: "Jupyter cell file",
			stack: []string{linear, logits, "/tmp/ipykernel_1234/2385717.py:4 <module>"},
			kind:  SiteLibrary, site: logits, caller: "/tmp/ipykernel_1234/2385717.py:4 <module>"},
		{name: "einops folds into the model line",
			stack: []string{venv + "einops/einops.py:412 rearrange", venv + "diffusers/models/attention.py:77 forward", trainLine},
			kind:  SiteLibrary, site: venv + "diffusers/models/attention.py:77 forward", caller: trainLine},
		{name: "--focus: only the user's file counts",
			focus: `train\.py`,
			stack: []string{linear, callImpl, logits, trainLine},
			kind:  SiteUser, site: trainLine},
		{name: "--focus on a library: the caller is still the user's line",
			focus: `modeling_llama`,
			stack: []string{linear, venv + "transformers/activations.py:103 forward", logits, hfWrapper, trainLine},
			kind:  SiteLibrary, site: logits, caller: trainLine},
		{name: "--focus does not bring back folded frames",
			focus: `transformers/utils`,
			stack: []string{linear, hfWrapper, trainLine},
			kind:  SitePython, site: linear},
		{name: "--focus matching nothing: the innermost Python frame",
			focus: `nothing-matches`,
			stack: []string{linear, logits, trainLine},
			kind:  SitePython, site: linear},
		{name: "--ignore site-packages: the old rule, the first frame outside installed packages",
			ignore: `site-packages`,
			stack:  []string{linear, logits, hfWrapper, trainLine},
			kind:   SiteUser, site: trainLine},
		{name: "--ignore matched on the recorded Windows name too",
			ignore: `\\Lib\\site-packages\\`,
			stack:  []string{winLinear, winLogits, winTrain},
			kind:   SiteUser, site: winTrain},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, err := NewFilter(tt.ignore, tt.focus)
			if err != nil {
				t.Fatal(err)
			}
			st := snapshot.NewStacks()
			var ids []snapshot.FrameID
			for _, s := range tt.stack {
				ids = append(ids, st.InternFrame(frameOf(t, s)))
			}
			id := st.InternStack(ids)
			got := f.SiteOf(st, id)
			name := func(has bool, fid snapshot.FrameID) string {
				if !has {
					return ""
				}
				return FrameLabel(st.Frame(fid))
			}
			// The frame as labels name it (FrameLabel: srcpath.Show's file).
			label := func(spec string) string {
				if spec == "" {
					return ""
				}
				fr := frameOf(t, spec)
				return FrameLabel(&fr)
			}
			site, caller := label(tt.site), label(tt.caller)
			hasFrame := got.Kind == SiteUser || got.Kind == SiteLibrary || got.Kind == SitePython
			if got.Kind != tt.kind || name(hasFrame, got.Frame) != site || name(got.HasCaller, got.Caller) != caller {
				t.Errorf("SiteOf = %s %q called from %q, want %s %q called from %q",
					got.Kind, name(hasFrame, got.Frame), name(got.HasCaller, got.Caller), tt.kind, site, caller)
			}
			if got.Kind == SiteLibrary && got.HasCaller {
				want := site + " (called from " + caller + ")"
				if l := got.Label(st); l != want {
					t.Errorf("Label = %q, want %q", l, want)
				}
			}
		})
	}
}

func TestNormPath(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{`D:\proj\.venv\Lib\site-packages\torch\functional.py`, "<site-packages>/torch/functional.py"},
		{`C:\Users\me\AppData\Local\Programs\Python\Python311\Lib\threading.py`, "/users/me/appdata/local/programs/python/python311/lib/threading.py"},
		{"C:/Python312/Lib/site-packages/timm/models/vit.py", "<site-packages>/timm/models/vit.py"},
		{"/home/me/.venv/lib/python3.12/site-packages/transformers/models/llama/modeling_llama.py", "<site-packages>/transformers/models/llama/modeling_llama.py"},
		{"/usr/lib/python3/dist-packages/numpy/core/numeric.py", "<site-packages>/numpy/core/numeric.py"},
		{"<site-packages>/torch/nn/modules/module.py", "<site-packages>/torch/nn/modules/module.py"},
		{"/home/me/Proj/Train.py", "/home/me/Proj/Train.py"}, // case kept off Windows
		{"/home/me/my-site-packages/x.py", "/home/me/my-site-packages/x.py"},
		{`\\server\share\proj\train.py`, "//server/share/proj/train.py"},
		{"<frozen runpy>", "<frozen runpy>"},
	} {
		if got := normPath(tt.in); got != tt.want {
			t.Errorf("normPath(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestFrameClass: each frame's class, Linux and Windows alike.
func TestFrameClass(t *testing.T) {
	f, _ := NewFilter("", "")
	for _, tt := range []struct {
		frame string
		want  FrameClass
	}{
		{linear, FrameFolded},
		{winLinear, FrameFolded},
		{logits, FrameLibrary},
		{winLogits, FrameLibrary},
		{hfWrapper, FrameFolded},
		{venv + "transformers/trainer.py:2206 train", FrameFolded},
		{venv + "transformers/trainer_pt_utils.py:10 f", FrameFolded},
		{venv + "transformers/training_args.py:10 f", FrameFolded},
		{venv + "transformers/modeling_utils.py:2100 _init_weights", FrameLibrary},
		{venv + "accelerate/accelerator.py:2300 backward", FrameFolded},
		{venv + "lightning_fabric/strategies/ddp.py:10 f", FrameFolded},
		{venv + "memscope/record.py:10 record", FrameFolded},
		{venv + "flash_attn/flash_attn_interface.py:90 _flash_attn_forward", FrameFolded},
		{venv + "peft/tuners/lora/layer.py:500 forward", FrameLibrary},
		{venv + "torchvision/models/resnet.py:90 forward", FrameLibrary},
		{"/home/me/pytorch/torch/nn/modules/module.py:1790 _call_impl", FrameFolded},
		{"/home/me/proj/torchx.py:1 f", FrameUser},
		{"/usr/lib64/python3.11/threading.py:10 run", FrameFolded},
		{"/opt/homebrew/Cellar/python@3.12/3.12.3/Frameworks/Python.framework/Versions/3.12/lib/python3.12/threading.py:10 run", FrameFolded},
		{"/usr/local/lib/python3.13t/threading.py:10 run", FrameFolded},
		{`C:\Users\me\miniconda3\envs\ml\Lib\threading.py:10 run`, FrameFolded},
		{`C:\Users\me\AppData\Roaming\uv\python\cpython-3.12.3-windows-x86_64-none\Lib\threading.py:10 run`, FrameFolded},
		{"/home/me/proj/lib/model.py:10 forward", FrameUser},
		{"<python>/contextlib.py:81 inner", FrameFolded},
		{"<frozen importlib._bootstrap>:488 _call_with_frames_removed", FrameFolded},
		{"<string>:2 __init__", FrameFolded},
		{"<stdin>:3 <module>", FrameUser},
		{"<memscope>/harness.py:300 train_steps", FrameFolded},
		{`C:\Users\me\AppData\Local\Temp\memscope-harness-12\harness.py:300 train_steps`, FrameFolded},
		{"<repo>/capture/harness.py:389 __call__", FrameUser},
		{"??:0 malloc", FrameFolded},
		{"/home/me/proj/train.py:0 main", FrameFolded}, // no line: reached through C++
		{"at::empty@RegisterCUDA_0.cpp", FrameFolded},
		{"f@/usr/lib/x86_64-linux-gnu/libcuda.so.1", FrameFolded},
		{"../sysdeps/unix/sysv/linux/x86_64/clone3.S:81 __clone3", FrameFolded},
		{"./nptl/pthread_create.c:447 start_thread", FrameFolded},
		{"/usr/include/c++/13/bits/shared_ptr_base.h:1070 ~__shared_count", FrameFolded},
		{"/pytorch/torch/csrc/autograd/engine.cpp:1189 thread_main", FrameFolded},
		{"??:12 PyEval_EvalFrameDefault", FrameFolded},
		{"/home/me/proj/fast.pyx:12 kernel", FrameFolded},
		{"/home/me/proj/lib.so.2:7 f", FrameFolded},
		{"<site-packages>/mylib/ext.cpp:40 f", FrameFolded},
		{"<ipython-input-3-abc>:2 <module>", FrameUser},
		{`C:\Users\me\proj\TRAIN.PY:3 main`, FrameUser},
		{`f@C:\Windows\System32\nvcuda.dll`, FrameFolded},
	} {
		fr := frameOf(t, tt.frame)
		if got := f.Class(&fr); got != tt.want {
			t.Errorf("Class(%s) = %s, want %s", tt.frame, got, tt.want)
		}
	}
}

// TestSiteTableGrows: a table made before frames and stacks were added is
// extended, and a table in use is never changed under its reader.
func TestSiteTableGrows(t *testing.T) {
	f, _ := NewFilter("", "")
	st := snapshot.NewStacks()
	a := st.InternStack([]snapshot.FrameID{st.InternFrame(frameOf(t, linear)), st.InternFrame(frameOf(t, trainLine))})
	old := f.For(st)
	b := st.InternStack([]snapshot.FrameID{st.InternFrame(frameOf(t, logits)), st.InternFrame(frameOf(t, trainLine))})
	if got := f.SiteOf(st, b); got.Kind != SiteLibrary || !got.HasCaller {
		t.Errorf("site of a stack added later = %+v, want a library site with a caller", got)
	}
	if got := f.SiteOf(st, a); got.Kind != SiteUser {
		t.Errorf("site of the first stack = %+v, want user", got)
	}
	if len(old.site) != 2 {
		t.Errorf("the first table changed: %d stacks, want 2", len(old.site))
	}
}

// TestNativeFramesNeverSites runs the rule on the two fixtures recorded with
// stacks="all", whose stacks interleave C++ and Python frames and include
// the autograd thread's, which has no Python frame at all. Where glibc's
// debug information is installed, that thread's outermost frames carry a
// file and a line: "../sysdeps/unix/sysv/linux/x86_64/clone3.S":81 __clone3
// under "./nptl/pthread_create.c":447 start_thread; on the capture machine
// they were symbolised without it ("??" __clone and its neighbour), so the
// test gives them those names and lines. Then a stack's site is SiteNone
// exactly when none of its frames is Python by the rule's own definition
// (a line and a ".py" file or a "<…>" name), and no top site at the peak
// is a native frame.
func TestNativeFramesNeverSites(t *testing.T) {
	python := func(fr *snapshot.Frame) bool {
		if fr.Line <= 0 {
			return false
		}
		return strings.HasSuffix(fr.Filename, ".py") ||
			strings.HasPrefix(fr.Filename, "<") && strings.Contains(fr.Filename, ">") && !strings.Contains(fr.Filename, "/")
	}
	for _, name := range []string{"stacks-all", "plain-sgd-leak"} {
		t.Run(name, func(t *testing.T) {
			s, err := snapshot.Open(filepath.Join("../fixtures", name, "snapshot.pickle"))
			if err != nil {
				t.Fatal(err)
			}
			st := s.Stacks
			var clone, start int
			for i := range st.Frames {
				switch fr := &st.Frames[i]; {
				case fr.Filename == "??" && fr.Name == "__clone":
					fr.Filename, fr.Line, fr.Name = "../sysdeps/unix/sysv/linux/x86_64/clone3.S", 81, "__clone3"
					clone++
				case fr.Filename == "??" && fr.Name == "pthread_condattr_setpshared":
					// start_thread, named by the nearest exported symbol
					fr.Filename, fr.Line, fr.Name = "./nptl/pthread_create.c", 447, "start_thread"
					start++
				}
			}
			if clone != 1 || start != 1 {
				t.Fatalf("%d __clone and %d start_thread frames, want 1 of each (the autograd thread's)", clone, start)
			}
			f, _ := NewFilter("", "")
			var native int
			for id := snapshot.StackID(1); int(id) < st.Len(); id++ {
				has := false
				for _, fid := range st.Stack(id) {
					has = has || python(st.Frame(fid))
				}
				if !has {
					native++
				}
				got := f.SiteOf(st, id)
				if (got.Kind == SiteNone) == has {
					label := "(none)"
					if got.Kind != SiteNone {
						label = FrameLabel(st.Frame(got.Frame))
					}
					t.Errorf("stack %d (Python frames: %v): site %s %s", id, has, got.Kind, label)
				}
			}
			if native == 0 {
				t.Fatal("no stack without a Python frame: the autograd thread's stacks are missing")
			}
			sum := Summarize(Analyze(s, Options{Device: -1}), 100)
			for _, d := range sum.Devices {
				for _, ts := range d.TopSites {
					switch ts.Site.Kind {
					case SiteUser, SiteLibrary, SitePython:
						if fr := st.Frame(ts.Site.Frame); !python(fr) {
							t.Errorf("top site %s is a native frame (%s, %s)", ts.Label, units.Bytes(ts.Bytes), ts.Site.Kind)
						}
					}
				}
			}
		})
	}
}
