package budget

import "testing"

func TestGPUWorkspaceIn(t *testing.T) {
	h100, _ := LookupGPU("H100")
	a100, _ := LookupGPU("A100")
	for _, c := range []struct {
		g    GPU
		mode Mode
		want int64
	}{
		{h100, Train, 2 * CublasWorkspace},
		{h100, Infer, CublasWorkspace},
		{a100, Train, 2 * olderCublasW},
		{a100, Infer, olderCublasW},
		{GPU{Memory: 8 << 30}, Train, -1},
	} {
		if got := c.g.WorkspaceIn(c.mode); got != c.want {
			t.Errorf("%s.WorkspaceIn(%s) = %d, want %d", c.g.Name, c.mode, got, c.want)
		}
	}
}
