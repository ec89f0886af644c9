#!/usr/bin/env bash
# Session 67's device calls. PART=ncu: Nsight Compute pipe utilization and
# stall reasons of the attention forward (ours at D = 64 and 128, best
# configs of the last table; torch's flash and cuDNN kernels).
set -u
BIN=/tmp/tilebook
if [ ! -x $BIN ]; then xz -dc .carry/tilebook.xz > $BIN; chmod +x $BIN; fi
mkdir -p $OUT
D=bench/results/h200-2026-12-03-s67
case "${PART:-ncu}" in
ncu)
  NCU=/usr/local/cuda/bin/ncu
  M="gpu__time_duration.sum,sm__cycles_elapsed.avg,smsp__inst_executed.sum,launch__registers_per_thread,launch__block_size,launch__grid_size,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active"
  M="$M,regex:^sm__pipe_.*_cycles_active\.avg\.pct_of_peak_sustained_active$,regex:^sm__inst_executed_pipe_.*\.avg\.pct_of_peak_sustained_active$"
  M="$M,regex:^smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio$"
  for d in "64 4 6" "128 7"; do
    set -- $d
    timeout 150 $NCU --kernel-name regex:attn_fwd --launch-skip 1 --launch-count 1 --metrics "$M" $BIN run --device cuda $D/attnprobe67.py $1 $2 > $OUT/ncu_ours_$1_$2.txt 2>&1
    echo "ours $d rc=$?"
    [ -n "${3:-}" ] && { timeout 150 $NCU --kernel-name regex:attn_fwd --launch-skip 1 --launch-count 1 --metrics "$M" $BIN run --device cuda $D/attnprobe67.py $1 $3 > $OUT/ncu_ours_$1_$3.txt 2>&1; echo "ours $1 $3 rc=$?"; }
    timeout 150 $NCU --kernel-name regex:"flash|fmha|cudnn|sm90" --launch-skip 0 --launch-count 4 --metrics "$M" python3 $D/attnprobe67.py $1 --torch > $OUT/ncu_peers_$1.txt 2>&1
    echo "peers $1 rc=$?"
  done
  for f in $OUT/ncu_*.txt; do
    echo "== $f"
    grep -E "^  [a-zA-Z_].*\(|gpu__time|registers_per|block_size|issue_active|pct_of_peak|stalled_(barrier|wait|long|short|gmma|math|mio|not_sel|dispatch|selected)" $f | awk '$NF != "0" && $NF != "0.00"' | sed 's/smsp__average_warps_issue_stalled_//; s/_per_issue_active.ratio//; s/.avg.pct_of_peak_sustained_active//' | cut -c1-150
  done
  ;;
esac
case "${PART:-}" in
cfg)
  # Attention forward configs: default code, 8-warp rotation, deferred second dot.
  for r in def all defer def all defer; do
    unset TILEBOOK_ROTATE_DOTS TILEBOOK_DEFER_DOTS
    [ $r = all ] && export TILEBOOK_ROTATE_DOTS=all
    [ $r = defer ] && export TILEBOOK_DEFER_DOTS=1
    echo "== mode=$r"
    timeout 150 $BIN run --device cuda $D/attncfg67.py ${DS:-64 128} 2>&1 | grep -v "^\[" | tee -a $OUT/cfg_$r.txt
  done
  unset TILEBOOK_ROTATE_DOTS
  # The benchmark's own check (every config, forward and backward) with the
  # deferred loops, every launch compared with the CPU backend.
  TILEBOOK_CHECK_GPU=1 timeout 150 $BIN run --device cuda bench/ln_attn_bench.py --check > $OUT/check_defer.txt 2>&1; echo "check defer rc=$?"; tail -4 $OUT/check_defer.txt
  unset TILEBOOK_DEFER_DOTS
  echo "== triton"
  timeout 200 python3 $D/attncfg67.py ${DS:-64 128} 2>&1 | tail -12 | tee $OUT/cfg_triton.txt
  ;;
esac
case "${PART:-}" in
defer)
  # The deferred second dot against the default code, each mode with its
  # own compile cache (TILEBOOK_DEFER_DOTS is not in the cache key of the
  # binary measured), then the benchmark's check with it.
  for r in def defer def defer; do
    unset TILEBOOK_DEFER_DOTS
    [ $r = defer ] && export TILEBOOK_DEFER_DOTS=1
    echo "== mode=$r"
    TILEBOOK_CACHE_DIR=/tmp/cache_$r timeout 120 $BIN run --device cuda $D/attncfg67.py ${DS:-128} 2>&1 | grep -v "^\[" | tee -a $OUT/defer_$r.txt
  done
  TILEBOOK_CACHE_DIR=/tmp/cache_defer TILEBOOK_CHECK_GPU=1 timeout 120 $BIN run --device cuda bench/ln_attn_bench.py --check > $OUT/check_defer.txt 2>&1; echo "check defer rc=$?"; tail -4 $OUT/check_defer.txt
  unset TILEBOOK_DEFER_DOTS
  ;;
esac
case "${PART:-}" in
proto)
  for r in 1 2; do
    timeout 100 $BIN run --device cuda $D/proto67.py 2>&1 | grep -v "^\[" | tee -a $OUT/proto_ours.txt
    timeout 100 python3 $D/proto67.py --torch 2>&1 | tail -6 | tee -a $OUT/proto_torch.txt
  done
  timeout 60 python3 $D/proto67.py 2>&1 | tail -6 | tee -a $OUT/proto_triton.txt
  ;;
esac
