#!/usr/bin/env bash
# Session 56's device calls (PART=...): ptxas figures of the backward's
# kernels (dots early or not), the benchmark's correctness check, the A/B
# probe, the GPU suite, the tables.
set -u
BIN=/tmp/tilebook
if [ ! -s $BIN ]; then xz -dc .carry/tilebook.xz > $BIN.part && mv $BIN.part $BIN && chmod +x $BIN; fi
ls -la .carry; sha256sum .carry/tilebook.xz
$BIN --version || { echo "NO WORKING BINARY"; rm -f $BIN; exit 3; }
mkdir -p $OUT
PTXAS=$(python3 -c "import triton,os;print(os.path.join(os.path.dirname(triton.__file__),'backends/nvidia/bin/ptxas'))" 2>/dev/null)
case "${PART:-suite}" in
probe)
  for f in .carry/ptx/*.ptx; do
    echo "$(basename $f): $($PTXAS -arch=sm_90a -v $f -o /tmp/x.cubin 2>&1 | grep -o 'Used [0-9]* registers\|[0-9]* bytes spill stores\|error.*' | tr '\n' ' ')"
  done | tee $OUT/ptxas.txt
  timeout 200 $BIN run --device cuda bench/ln_attn_bench.py --check > $OUT/check.txt 2>&1; echo "check rc=$?" | tee -a $OUT/check.txt
  tail -3 $OUT/check.txt
  for m in ${MODES:-0 1 0 1}; do
    echo "== TILEBOOK_EARLY_DOTS=$m" | tee -a $OUT/early_ab.txt
    TILEBOOK_EARLY_DOTS=$m timeout ${AB_S:-110} $BIN run --device cuda .carry/attnearly56.py 2>&1 | grep -v "^\[" | tee -a $OUT/early_ab.txt
  done
  ;;
regs)
  echo "== triton" | tee $OUT/dqregs.txt
  timeout 150 python3 .carry/dqregs56.py 2>&1 | tail -8 | tee -a $OUT/dqregs.txt
  echo "== tilebook" | tee -a $OUT/dqregs.txt
  timeout 150 $BIN run --device cuda .carry/dqregs56.py 2>&1 | grep -v "^\[" | tail -8 | tee -a $OUT/dqregs.txt
  ;;
regs2)
  echo "== tilebook" | tee -a $OUT/dqregs.txt
  timeout 100 $BIN run --device cuda .carry/dqregs56.py 2>&1 | grep -v "^\[" | tail -8 | tee -a $OUT/dqregs.txt
  mkdir -p /tmp/t/ln_attn
  OUT=/tmp/t/ln_attn ROWS=ln_attn timeout 330 bench/run_gpu.sh $BIN > /tmp/t/ln_attn/run_gpu_output.txt 2>&1; echo "ln_attn rc=$?"
  grep ratio /tmp/t/ln_attn/run_gpu_output.txt | grep -v layernorm_fwd | sed 's/  (higher is better)//' | cut -c1-120
  tar -C /tmp/t -cJf $OUT/tables.tar.xz .
  ;;
suiteprobe)
  echo "== triton" | tee $OUT/kvregs.txt
  timeout 100 python3 .carry/kvregs56.py 2>&1 | tail -9 | tee -a $OUT/kvregs.txt
  echo "== tilebook" | tee -a $OUT/kvregs.txt
  timeout 100 $BIN run --device cuda .carry/kvregs56.py 2>&1 | grep -v "^\[" | tail -9 | tee -a $OUT/kvregs.txt
  TILEBOOK_CHECK_GPU=1 timeout ${SUITE_S:-400} tests/gpu/run.sh $BIN > $OUT/suite.txt 2>&1; echo "suite rc=$?" >> $OUT/suite.txt
  grep -v "^ok" $OUT/suite.txt | tail -30
  ;;
fused)
  echo "== triton" | tee $OUT/fused.txt
  timeout 200 python3 .carry/fusedbwd56.py 4096 16384 2>&1 | tail -6 | tee -a $OUT/fused.txt
  echo "== tilebook (mma.sync: no wgmma for a transposed register operand)" | tee -a $OUT/fused.txt
  timeout 100 $BIN run --device cuda .carry/fusedbwd56.py 4096 2>&1 | grep -v "^\[" | tail -4 | tee -a $OUT/fused.txt
  ;;
final)
  timeout 120 $BIN run --device cuda bench/ln_attn_bench.py --check > $OUT/check.txt 2>&1; echo "check rc=$?" | tee -a $OUT/check.txt
  tail -3 $OUT/check.txt
  cat tests/ir/matmul.py tests/ir/softmax.py tests/gpu/column_vectors.py > /tmp/cv.py
  TILEBOOK_CHECK_GPU=1 TILEBOOK_CHECK_BOUNDS=1 timeout 60 $BIN run --device cuda /tmp/cv.py > $OUT/column_vectors.txt 2>&1; echo "column_vectors rc=$?" | tee -a $OUT/column_vectors.txt
  TILEBOOK_CHECK_GPU=1 timeout 60 $BIN run --device cuda /tmp/cv.py >> $OUT/column_vectors.txt 2>&1; echo "column_vectors unchecked-bounds rc=$?" | tee -a $OUT/column_vectors.txt
  mkdir -p /tmp/t/ln_attn
  OUT=/tmp/t/ln_attn ROWS=ln_attn timeout 300 bench/run_gpu.sh $BIN > /tmp/t/ln_attn/run_gpu_output.txt 2>&1; echo "ln_attn rc=$?"
  grep ratio /tmp/t/ln_attn/run_gpu_output.txt | grep attention_bwd | sed 's/  (higher is better)//' | cut -c1-120
  tar -C /tmp/t -cJf $OUT/tables.tar.xz .
  ;;
suite)
  TILEBOOK_CHECK_GPU=1 timeout ${SUITE_S:-420} tests/gpu/run.sh $BIN > $OUT/suite.txt 2>&1; echo "suite rc=$?" >> $OUT/suite.txt
  grep -v "^ok" $OUT/suite.txt | tail -40
  ;;
tables)
  cat tests/ir/matmul.py tests/ir/softmax.py tests/gpu/column_vectors.py > /tmp/cv.py
  for i in 1 2 3; do TILEBOOK_CHECK_GPU=1 TILEBOOK_CHECK_BOUNDS=1 timeout 60 $BIN run --device cuda /tmp/cv.py 2>&1 | tail -6 | tee -a $OUT/column_vectors.txt; done
  for r in ${TABLES:-base ln_attn}; do
    mkdir -p /tmp/t/$r
    OUT=/tmp/t/$r ROWS=$r timeout 330 bench/run_gpu.sh $BIN > /tmp/t/$r/run_gpu_output.txt 2>&1; echo "$r rc=$?"
    grep ratio /tmp/t/$r/run_gpu_output.txt | sed 's/  (higher is better)//; s/  (lower is better)//' | cut -c1-120
  done
  tar -C /tmp/t -cJf $OUT/tables.tar.xz .
  ;;
esac
