#!/usr/bin/env bash
# The GPU benchmark, in one invocation on the GPU machine: Triton and torch
# peers (peers.py, carried from shared/bench into .carry/), then tilebook's
# side, then ratios into latest.json. Writes into $OUT when set.
# Usage: bench/run_gpu.sh [path/to/tilebook]
set -eu
BIN=${1:-./target/release/tilebook}
OUTDIR=${OUT:-bench/results}
mkdir -p "$OUTDIR"
(cd "$OUTDIR" && OUT="$OUTDIR" python3 "$OLDPWD/.carry/peers.py" --quick) > "$OUTDIR/peers.log" 2>&1 || { cat "$OUTDIR/peers.log"; exit 1; }
OUT="$OUTDIR" python3 bench/peers_fp8.py >> "$OUTDIR/peers.log" 2>&1 || { cat "$OUTDIR/peers.log"; exit 1; }
# Triton running the layer-norm and attention kernels that tilebook runs below.
python3 bench/ln_attn_bench.py > "$OUTDIR/peers_ln_attn.txt" 2>&1 || { cat "$OUTDIR/peers_ln_attn.txt"; exit 1; }
tmp=$(mktemp -d)
cat tests/ir/matmul.py bench/gpu_bench.py > "$tmp/gpu_bench.py"
# No driver JIT cache and an empty tilebook cache: the first-launch and
# autotuning times must include compiling everything.
CUDA_CACHE_DISABLE=1 TILEBOOK_CACHE_DIR="$tmp/cache" "$BIN" run --device cuda "$tmp/gpu_bench.py" | tee "$OUTDIR/tilebook.txt"
"$BIN" run --device cuda bench/ln_attn_bench.py | tee -a "$OUTDIR/tilebook.txt"
# Checked GPU mode's cost on the same kernels (checked / unchecked time).
cat tests/ir/matmul.py bench/check_bounds_cost.py > "$tmp/check_bounds_cost.py"
"$BIN" run --device cuda "$tmp/check_bounds_cost.py" | tee "$OUTDIR/check_bounds.txt"
python3 bench/merge.py "$OUTDIR/peers.json" "$OUTDIR/tilebook.txt" "$OUTDIR/latest.json"
