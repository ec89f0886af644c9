#!/usr/bin/env bash
set -u
BIN=/tmp/tilebook
if [ ! -x $BIN ]; then xz -dc .carry/tilebook.xz > $BIN; chmod +x $BIN; fi
mkdir -p $OUT
PTXAS=$(python3 -c "import triton,os;print(os.path.join(os.path.dirname(triton.__file__),'backends/nvidia/bin/ptxas'))" 2>/dev/null)
case "${PART:-suite}" in
tma)
  for f in .carry/ptx/*.ptx; do
    echo "$(basename $f): $($PTXAS -arch=sm_90a -v $f -o /tmp/x.cubin 2>&1 | grep -o 'Used [0-9]* registers\|[0-9]* bytes spill stores\|error.*\|C7[0-9]*[^:]*' | tr '\n' ' ')"
  done | tee $OUT/ptxas.txt
  TILEBOOK_CHECK_GPU=1 timeout 200 $BIN run --device cuda tests/gpu/tma.py > $OUT/tma.txt 2>&1; echo "tma rc=$?" | tee -a $OUT/tma.txt
  tail -4 $OUT/tma.txt
  { echo "SEED = 5"; cat tests/conformance/prelude.py tests/conformance/descriptors.py; } > /tmp/desc.py
  TILEBOOK_CHECK_GPU=1 timeout 120 $BIN run --device cuda /tmp/desc.py > $OUT/desc.txt 2>&1; echo "desc rc=$?" | tee -a $OUT/desc.txt
  tail -5 $OUT/desc.txt
  ;;
tmabench)
  timeout 200 $BIN run --device cuda .carry/tmabench.py 2>&1 | grep -v "^\[" | tee $OUT/tmabench_ours.txt
  timeout 200 python3 .carry/tmabench.py 2>&1 | tail -8 | tee $OUT/tmabench_triton.txt
  ;;
adesc)
  for f in .carry/ptx/*.ptx; do
    echo "$(basename $f): $($PTXAS -arch=sm_90a -v $f -o /tmp/x.cubin 2>&1 | grep -o 'Used [0-9]* registers\|[0-9]* bytes spill stores\|[0-9]* bytes smem\|error.*' | tr '\n' ' ')"
  done | tee $OUT/ptxas.txt
  cp bench/results/h200-2026-11-30-s52/attn_desc.py /tmp/attn_desc.py
  timeout 250 $BIN run --device cuda /tmp/attn_desc.py 2>&1 | grep -v "^\[" | tee $OUT/attn_desc_ours.txt
  [ -n "${TRITON:-}" ] && timeout 250 python3 /tmp/attn_desc.py 2>&1 | tail -12 | tee $OUT/attn_desc_triton.txt
  ;;
surface)
  timeout 200 $BIN run --device cuda tests/surface/persistent_matmul.py > $OUT/persistent_matmul.txt 2>&1; echo "persistent_matmul rc=$?" | tee -a $OUT/persistent_matmul.txt
  grep -v "^\[" $OUT/persistent_matmul.txt | tail -30
  ;;
suite)
  TILEBOOK_CHECK_GPU=1 timeout 300 tests/gpu/run.sh $BIN > $OUT/suite.txt 2>&1; echo "suite rc=$?" >> $OUT/suite.txt
  grep -v "^ok" $OUT/suite.txt | tail -40
  ;;
tables)
  for r in ${TABLES:-base ln_attn}; do
    mkdir -p /tmp/t/$r
    OUT=/tmp/t/$r ROWS=$r timeout 330 bench/run_gpu.sh $BIN > /tmp/t/$r/run_gpu_output.txt 2>&1; echo "$r rc=$?"
    grep ratio /tmp/t/$r/run_gpu_output.txt | sed 's/  (higher is better)//; s/  (lower is better)//' | cut -c1-120
  done
  tar -C /tmp/t -cJf $OUT/tables.tar.xz .
  ;;
esac
case "${PART:-}" in
ncu)
  NCU=/usr/local/cuda/bin/ncu
  M="gpu__time_duration.sum,sm__cycles_elapsed.avg,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,launch__registers_per_thread,launch__block_size,launch__grid_size,launch__shared_mem_per_block_dynamic,launch__shared_mem_per_block_static,sm__warps_active.avg.pct_of_peak_sustained_active"
  M="$M,regex:^smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio$"
  cp bench/results/h200-2026-11-30-s53/attnprobe53.py /tmp/ap.py
  timeout 200 $NCU --kernel-name regex:attn_fwd --launch-skip 1 --launch-count 1 --metrics "$M" $BIN run --device cuda /tmp/ap.py 3 7 > $OUT/ncu_ours.txt 2>&1
  echo "ours rc=$?"
  timeout 200 $NCU --kernel-name regex:"flash|fmha|cudnn|sm90|attn" --launch-skip 0 --launch-count 8 --metrics "$M" python3 /tmp/ap.py --torch > $OUT/ncu_peers.txt 2>&1
  echo "peers rc=$?"
  grep -E "^  [a-zA-Z_].*\(|gpu__time|tensor_cycles|registers_per|grid_size|block_size|shared_mem|warps_active|stalled_(barrier|wait|long|short|gmma|math|mio|not_sel|dispatch|lg_|sleeping|membar)" $OUT/ncu_ours.txt $OUT/ncu_peers.txt | sed 's/smsp__average_warps_issue_stalled_//; s/_per_issue_active.ratio//' | cut -c1-170
  ;;
esac
case "${PART:-}" in
rel)
  for r in 0 1 0 1; do TILEBOOK_BULK_RELEASE=$r timeout 150 $BIN run --device cuda .carry/attnrel53.py 2>&1 | grep -v "^\[" | tee -a $OUT/rel_ours.txt; done
  [ -n "${TRITON:-}" ] && timeout 200 python3 .carry/attnrel53.py 2>&1 | tail -8 | tee $OUT/rel_triton.txt
  ;;
esac
case "${PART:-}" in
pp)
  for r in 1 0 1 0; do TILEBOOK_PINGPONG=$r timeout 120 $BIN run --device cuda .carry/attnrel53.py 2>&1 | grep -v "^\[" | tee -a $OUT/pp_ours.txt; done
  TILEBOOK_CHECK_GPU=1 timeout 150 $BIN run --device cuda bench/ln_attn_bench.py --check > $OUT/check.txt 2>&1; echo "check rc=$?"; tail -3 $OUT/check.txt
  ;;
esac
