#!/usr/bin/env bash
# The multi-GPU benchmark (issue 22), in one invocation on a machine with at
# least two GPUs: torch.distributed's all-reduce and torch's peer copies
# (peers_multi_gpu.py), then tilebook's side (multi_gpu_bench.py), then
# ratios into multi_gpu.json. Writes into $OUT when set.
# Usage: bench/run_multi_gpu.sh [path/to/tilebook]
set -eu
BIN=${1:-./target/release/tilebook}
OUTDIR=${OUT:-bench/results}
mkdir -p "$OUTDIR"
(cd "$OUTDIR" && python3 "$OLDPWD/bench/peers_multi_gpu.py") > "$OUTDIR/peers_multi.log" 2>&1 || { cat "$OUTDIR/peers_multi.log"; exit 1; }
tmp=$(mktemp -d)
cat tests/ir/matmul.py bench/multi_gpu_bench.py > "$tmp/multi_gpu_bench.py"
# Cold tuning must compile: no tilebook cache, no driver JIT cache.
CUDA_CACHE_DISABLE=1 TILEBOOK_CACHE=off "$BIN" run --device cuda "$tmp/multi_gpu_bench.py" 2>&1 | tee "$OUTDIR/multi_gpu_tilebook.txt"
python3 bench/merge_multi.py "$OUTDIR/peers_multi_gpu.json" "$OUTDIR/multi_gpu_tilebook.txt" "$OUTDIR/multi_gpu.json"
