package capture

import (
	"slices"
	"testing"
)

func TestSetWorkloadArgs(t *testing.T) {
	for _, tt := range []struct {
		set  map[string]string
		want []string
	}{
		{nil, nil},
		{map[string]string{"out": "dir", "batch": "1,2"}, nil}, // not the workload's
		{map[string]string{"width": "512", "seq": "128"}, []string{"--seq", "128", "--width", "512"}},
		{map[string]string{"checkpointing": "true", "layers": "2"}, []string{"--layers", "2", "--checkpointing"}},
		{map[string]string{"checkpointing": "false"}, nil},
		{map[string]string{"config": "cfg.json", "vision-model": "vit_b_32"}, []string{"--config", "cfg.json", "--vision-model", "vit_b_32"}},
	} {
		c := SweepConfig{WorkloadArgs: []string{"--stale"}}
		c.SetWorkloadArgs(tt.set)
		if !slices.Equal(c.WorkloadArgs, tt.want) {
			t.Errorf("SetWorkloadArgs(%v) = %q, want %q", tt.set, c.WorkloadArgs, tt.want)
		}
	}
}

func TestSetSnapshots(t *testing.T) {
	for _, tt := range []struct {
		list, want []string
	}{
		{[]string{"all"}, []string{"fp32", "bf16"}},
		{[]string{"none"}, nil},
		{[]string{"bf16"}, []string{"bf16"}},
		{[]string{"fp32", "none"}, []string{"fp32", "none"}}, // a list: Check refuses what is not swept
	} {
		c := SweepConfig{Precisions: []string{"fp32", "bf16"}, SnapshotPrecisions: []string{"stale"}}
		c.SetSnapshots(tt.list)
		if !slices.Equal(c.SnapshotPrecisions, tt.want) {
			t.Errorf("SetSnapshots(%q) = %q, want %q", tt.list, c.SnapshotPrecisions, tt.want)
		}
	}
}
