#!/usr/bin/env bash
# Session 54's device calls (PART=...): ptxas figures, the "last warp
# issues" release mode's checks and A/B, the GPU suite, the tables.
set -u
BIN=/tmp/tilebook
if [ ! -x $BIN ]; then xz -dc .carry/tilebook.xz > $BIN; chmod +x $BIN; fi
mkdir -p $OUT
PTXAS=$(python3 -c "import triton,os;print(os.path.join(os.path.dirname(triton.__file__),'backends/nvidia/bin/ptxas'))" 2>/dev/null)
case "${PART:-suite}" in
ptx)
  for f in .carry/ptx/*.ptx; do
    echo "$(basename $f): $($PTXAS -arch=sm_90a -v $f -o /tmp/x.cubin 2>&1 | grep -o 'Used [0-9]* registers\|[0-9]* bytes spill stores\|[0-9]* bytes smem\|error.*' | tr '\n' ' ')"
  done | tee $OUT/ptxas.txt
  ;;
last)
  export TILEBOOK_BULK_RELEASE=${MODE:-3}
  TILEBOOK_CHECK_GPU=1 timeout 200 $BIN run --device cuda tests/gpu/tma.py > $OUT/tma3.txt 2>&1; echo "tma(3) rc=$?" | tee -a $OUT/tma3.txt
  tail -3 $OUT/tma3.txt
  { echo "SEED = 5"; cat tests/conformance/prelude.py tests/conformance/descriptors.py; } > /tmp/desc.py
  TILEBOOK_CHECK_GPU=1 timeout 120 $BIN run --device cuda /tmp/desc.py > $OUT/desc3.txt 2>&1; echo "desc(3) rc=$?" | tee -a $OUT/desc3.txt
  tail -3 $OUT/desc3.txt
  timeout 200 $BIN run --device cuda bench/ln_attn_bench.py --check > $OUT/check3.txt 2>&1; echo "check(3) rc=$?" | tee -a $OUT/check3.txt
  tail -3 $OUT/check3.txt
  unset TILEBOOK_BULK_RELEASE
  ;;
rel)
  for r in ${MODES:-1 3 1 3}; do TILEBOOK_BULK_RELEASE=$r timeout 150 $BIN run --device cuda .carry/attnrel54.py 2>&1 | grep -v "^\[" | tee -a $OUT/rel_ours.txt; done
  ;;
suite)
  TILEBOOK_CHECK_GPU=1 timeout ${SUITE_S:-420} tests/gpu/run.sh $BIN > $OUT/suite.txt 2>&1; echo "suite rc=$?" >> $OUT/suite.txt
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
bwd)
  timeout 250 $BIN run --device cuda .carry/attnbwd54.py 2>&1 | grep -v "^\[" | tee $OUT/bwd_ours.txt
  [ "${TRITON:-1}" = 1 ] && timeout 250 python3 .carry/attnbwd54.py 2>&1 | tail -6 | tee $OUT/bwd_triton.txt
  ;;
esac
