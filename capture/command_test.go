package capture

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseUserCommand(t *testing.T) {
	for _, tt := range []struct {
		argv []string
		want UserCommand
	}{
		{[]string{"python", "train.py", "--lr", "3"},
			UserCommand{Python: "python", Script: []string{"train.py", "--lr", "3"}}},
		{[]string{"/opt/venv/bin/python3.12", "-u", "-X", "dev", "-m", "pkg.train", "-v"},
			UserCommand{Python: "/opt/venv/bin/python3.12", PythonOpts: []string{"-u", "-X", "dev"},
				Script: []string{"-m", "pkg.train", "-v"}}},
		{[]string{"train.py", "a"}, UserCommand{Script: []string{"train.py", "a"}}},
		{[]string{"torchrun", "--nproc-per-node", "2", "--standalone", "--rdzv_endpoint=h:29500", "train.py", "--x", "1"},
			UserCommand{Torchrun: "torchrun", TorchrunOpts: []string{"--nproc-per-node", "2", "--standalone",
				"--rdzv_endpoint=h:29500"}, Script: []string{"train.py", "--x", "1"}}},
		{[]string{"torchrun", "--nnodes", "2", "-m", "pkg.train", "--steps", "3"},
			UserCommand{Torchrun: "torchrun", TorchrunOpts: []string{"--nnodes", "2"},
				Script: []string{"-m", "pkg.train", "--steps", "3"}}},
	} {
		got, err := ParseUserCommand(tt.argv)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseUserCommand(%q) = %+v, %v, want %+v", tt.argv, got, err, tt.want)
		}
	}
	for _, bad := range [][]string{nil, {"python"}, {"python", "-c", "print(1)"}, {"python", "-m"},
		{"bash", "run.sh"}, {"torchrun", "--no-python", "x"}, {"python", "-"}} {
		if got, err := ParseUserCommand(bad); err == nil {
			t.Errorf("ParseUserCommand(%q) = %+v, nil, want an error", bad, got)
		}
	}
}

func TestCaptureArgv(t *testing.T) {
	o := CaptureOptions{Out: "run", MaxEntries: 1000, Stacks: "python", MeasureSteps: "2-5", ProfileSteps: "3-4"}
	opts := "--out run --max-entries 1000 --stacks python --measure-steps 2-5 --profile-steps 3-4"
	for _, tt := range []struct {
		name string
		cmd  []string
		tr   Torchrun
		want string
	}{
		{"python", []string{"python3", "-u", "train.py", "--lr", "3"}, Torchrun{},
			"python3 -u /h/harness.py run " + opts + " -- train.py --lr 3"},
		{"bare script", []string{"train.py"}, Torchrun{},
			"py /h/harness.py run " + opts + " -- train.py"},
		{"nproc", []string{"python", "train.py"}, Torchrun{Nproc: 2, NodeRank: -1},
			"python -m torch.distributed.run --nproc_per_node 2 --standalone /h/harness.py run " + opts + " -- train.py"},
		{"multi-node", []string{"python", "-m", "pkg.train"},
			Torchrun{Nproc: 8, Nnodes: "2", NodeRank: 1, RdzvEndpoint: "head:29500"},
			"python -m torch.distributed.run --nproc_per_node 8 --nnodes 2 --node_rank 1 --rdzv_endpoint head:29500 " +
				"--rdzv_backend c10d --rdzv_id memscope /h/harness.py run " + opts + " -- -m pkg.train"},
		{"torchrun", []string{"torchrun", "--nproc-per-node=2", "-m", "pkg.train", "x"}, Torchrun{NodeRank: -1},
			"torchrun --nproc-per-node=2 /h/harness.py run " + opts + " -- -m pkg.train x"},
	} {
		u, err := ParseUserCommand(tt.cmd)
		if err != nil {
			t.Fatal(err)
		}
		argv, err := CaptureArgv(u, "py", "/h/harness.py", o, tt.tr)
		if got := strings.Join(argv, " "); err != nil || got != tt.want {
			t.Errorf("%s: CaptureArgv = %q, %v\nwant %q", tt.name, got, err, tt.want)
		}
	}
	u, _ := ParseUserCommand([]string{"torchrun", "train.py"})
	if _, err := CaptureArgv(u, "py", "h", o, Torchrun{Nproc: 2}); err == nil {
		t.Error("CaptureArgv(torchrun command, --nproc 2) = nil error, want one")
	}
}

func TestPointArgv(t *testing.T) {
	spec := PointSpec{Out: "d/points/bf16-b8", Workload: "llama", WorkloadArgs: []string{"--layers", "2"},
		Batch: 8, Precision: "bf16", Mode: "train", Optimizer: "adamw", Warmup: 1, Steps: 3,
		Fraction: 0.25, Snapshot: true, MaxEntries: 5000, Parallel: "ddp"}
	got := strings.Join(PointArgv("python3", "h.py", spec, Torchrun{Nproc: 2, NodeRank: -1}), " ")
	want := "python3 -m torch.distributed.run --nproc_per_node 2 --standalone h.py point --out d/points/bf16-b8 " +
		"--workload llama --batch 8 --precision bf16 --mode train --optimizer adamw --micro-batch 0 --warmup 1 " +
		"--steps 3 --parallel ddp --memory-fraction 0.25 --snapshot --max-entries 5000 --layers 2"
	if got != want {
		t.Errorf("PointArgv = %q\nwant %q", got, want)
	}
}
