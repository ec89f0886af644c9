#!/usr/bin/env bash
# The GPU benchmark, in one invocation on the GPU machine: Triton and torch
# peers (peers.py, carried from shared/bench into .carry/), then tilebook's
# side, then ratios into latest.json. Writes into $OUT when set.
# Usage: [ROWS=all|base|ln_attn] bench/run_gpu.sh [path/to/tilebook]
# ROWS splits the table into two invocations that each fit the device
# tool's 10 minutes: base (vector add, softmax, matmul, launch, tuning) and
# ln_attn (layer norm, attention); peers.py runs in both (torch's numbers).
set -eu
ROWS=${ROWS:-all}
BIN=${1:-./target/release/tilebook}
OUTDIR=${OUT:-bench/results}
mkdir -p "$OUTDIR"
(cd "$OUTDIR" && OUT="$OUTDIR" python3 "$OLDPWD/.carry/peers.py" --quick) > "$OUTDIR/peers.log" 2>&1 || { cat "$OUTDIR/peers.log"; exit 1; }
if [ "$ROWS" != ln_attn ]; then
  OUT="$OUTDIR" python3 bench/peers_fp8.py >> "$OUTDIR/peers.log" 2>&1 || { cat "$OUTDIR/peers.log"; exit 1; }
fi
if [ "$ROWS" != base ]; then
  # Triton running the layer-norm and attention kernels that tilebook runs below.
  python3 bench/ln_attn_bench.py > "$OUTDIR/peers_ln_attn.txt" 2>&1 || { cat "$OUTDIR/peers_ln_attn.txt"; exit 1; }
fi
: > "$OUTDIR/tilebook.txt"
tmp=$(mktemp -d)
cat tests/ir/matmul.py bench/gpu_bench.py > "$tmp/gpu_bench.py"
# No driver JIT cache and an empty tilebook cache: the first-launch and
# autotuning times must include compiling everything.
if [ "$ROWS" != ln_attn ]; then
  CUDA_CACHE_DISABLE=1 TILEBOOK_CACHE_DIR="$tmp/cache" "$BIN" run --device cuda "$tmp/gpu_bench.py" | tee -a "$OUTDIR/tilebook.txt"
fi
if [ "$ROWS" != base ]; then
  "$BIN" run --device cuda bench/ln_attn_bench.py | tee -a "$OUTDIR/tilebook.txt"
fi
if [ "$ROWS" != ln_attn ]; then
  # Checked GPU mode's cost on the same kernels (checked / unchecked time).
  cat tests/ir/matmul.py bench/check_bounds_cost.py > "$tmp/check_bounds_cost.py"
  "$BIN" run --device cuda "$tmp/check_bounds_cost.py" | tee "$OUTDIR/check_bounds.txt"
fi
python3 bench/merge.py "$OUTDIR/peers.json" "$OUTDIR/tilebook.txt" "$OUTDIR/latest.json"
