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
