package capture

import "testing"

func TestTorchrunCheck(t *testing.T) {
	for _, tt := range []struct {
		t    Torchrun
		want string
	}{
		{Torchrun{NodeRank: -1}, ""},
		{Torchrun{Nproc: 8, Nnodes: "2", NodeRank: 1, RdzvEndpoint: "h:29500"}, ""},
		{Torchrun{Nproc: -1, NodeRank: -1}, "--nproc -1: want a positive number"},
		{Torchrun{Nproc: 1, Nnodes: "2", NodeRank: -1}, "--nnodes, --node-rank and --rdzv-endpoint need --nproc"},
		{Torchrun{NodeRank: 0}, "--nnodes, --node-rank and --rdzv-endpoint need --nproc"},
		{Torchrun{RdzvEndpoint: "h:1", NodeRank: -1}, "--nnodes, --node-rank and --rdzv-endpoint need --nproc"},
	} {
		got := ""
		if err := tt.t.Check(); err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("%+v.Check() = %q, want %q", tt.t, got, tt.want)
		}
	}
}
