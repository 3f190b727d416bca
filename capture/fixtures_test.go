package capture

import (
	"path/filepath"
	"testing"
)

func TestCaptureFixtures(t *testing.T) {
	ddp, err := ReadRun(filepath.Join("..", "fixtures", "capture-ddp"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ddp.Ranks) != 2 || ddp.Run.ExitCode != 0 || ddp.Run.Nproc != 2 || len(ddp.Missing) != 0 {
		t.Fatalf("capture-ddp: %d ranks, run %+v, missing %v; want 2 ranks of nproc 2, exit 0", len(ddp.Ranks), ddp.Run, ddp.Missing)
	}
	oom, err := ReadRun(filepath.Join("..", "fixtures", "capture-oom"))
	if err != nil {
		t.Fatal(err)
	}
	r := oom.Ranks[0]
	if oom.Run.ExitCode != 1 || r.ExitCode != 1 || r.Exception == nil || !r.Exception.OOM || len(r.OOM) != 1 ||
		r.OOM[0].Request != 256<<20 || r.OOM[0].Phase != "backward" {
		t.Errorf("capture-oom: exit %d/%d, exception %+v, OOM events %+v; want status 1 from an OOM asking 256 MiB in backward",
			oom.Run.ExitCode, r.ExitCode, r.Exception, r.OOM)
	}
}
