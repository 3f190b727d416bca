package capture

// WorkloadFlag is a harness flag of a sweep's workload: memscope sweep
// defines it and passes it on, as given, when it is set.
type WorkloadFlag struct {
	Name  string
	Kind  string // int, string or bool
	Usage string
}

// WorkloadFlags are the workload flags a sweep passes to the harness, in
// the order they are passed.
var WorkloadFlags = []WorkloadFlag{
	{"seq", "int", "mlp, llama: tokens per sample (default 512)"},
	{"layers", "int", "llama: decoder layers (default 12)"},
	{"hidden", "int", "llama: hidden size (default 1024)"},
	{"intermediate", "int", "llama: MLP size (default 2816)"},
	{"heads", "int", "llama: attention heads (default 16)"},
	{"kv-heads", "int", "llama: key/value heads (default 8)"},
	{"vocab", "int", "llama: vocabulary (default 128256)"},
	{"config", "string", "llama: a transformers config.json `FILE` instead of the flags above"},
	{"checkpointing", "bool", "llama: activation checkpointing in every layer"},
	{"width", "int", "mlp: width (default 4096)"},
	{"depth", "int", "mlp: layers (default 8)"},
	{"classes", "int", "mlp, vit: classes (default 1000)"},
	{"vision-model", "string", "vit: a torchvision model `NAME` (default vit_b_16)"},
	{"image-size", "int", "vit: image side in pixels (default 224)"},
}

// SetWorkloadArgs sets WorkloadArgs from the workload flags the user set
// (set: a WorkloadFlags name to its value as given), in WorkloadFlags'
// order: --name value, or --name alone for a bool set true (one set false
// passes nothing).
func (c *SweepConfig) SetWorkloadArgs(set map[string]string) {
	c.WorkloadArgs = nil
	for _, f := range WorkloadFlags {
		v, ok := set[f.Name]
		switch {
		case !ok:
		case f.Kind == "bool":
			if v == "true" {
				c.WorkloadArgs = append(c.WorkloadArgs, "--"+f.Name)
			}
		default:
			c.WorkloadArgs = append(c.WorkloadArgs, "--"+f.Name, v)
		}
	}
}

// SetSnapshots sets SnapshotPrecisions from --snapshots: "all" (every
// precision swept), "none", or the precisions named.
func (c *SweepConfig) SetSnapshots(list []string) {
	switch {
	case len(list) == 1 && list[0] == "all":
		c.SnapshotPrecisions = c.Precisions
	case len(list) == 1 && list[0] == "none":
		c.SnapshotPrecisions = nil
	default:
		c.SnapshotPrecisions = list
	}
}
