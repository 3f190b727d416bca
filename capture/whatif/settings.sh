# The allocator settings every what-if workload runs under, NAME=PYTORCH_CUDA_ALLOC_CONF
# (sourced by make_whatif_fixtures.sh and repeat.sh; the fixture folders are the names).
settings=(
	"default="
	"expandable=expandable_segments:True"
	"maxsplit128=max_split_size_mb:128"
	"gc06=garbage_collection_threshold:0.6,max_split_size_mb:256"
	"pow2div4=roundup_power2_divisions:4"
)
