case "${PART:-suite}" in
suite)
  TILEBOOK_CHECK_GPU=1 timeout 400 tests/gpu/run.sh $BIN > $OUT/suite.txt 2>&1; echo "suite rc=$?" >> $OUT/suite.txt
  tail -3 $OUT/suite.txt
  ;;
esac
case "${PART:-suite}" in
tables)
  for r in ${TABLES:-base ln_attn}; do
    mkdir -p /tmp/t/$r
    OUT=/tmp/t/$r ROWS=$r timeout 280 bench/run_gpu.sh $BIN > /tmp/t/$r/run_gpu_output.txt 2>&1; echo "$r rc=$?"
    grep ratio /tmp/t/$r/run_gpu_output.txt | sed 's/  (higher is better)//; s/  (lower is better)//' | cut -c1-120
  done
  tar -C /tmp/t -cJf $OUT/tables.tar.xz .
  ;;
esac
case "${PART:-suite}" in
h47)
  VDIR=.carry/s47 timeout 200 python3 .carry/harness46.py 6 2>&1 | grep -v "^  sass" | tee $OUT/h47.txt | grep "median\|regis\|error\|Error"
  DT=fp8 BM=128 BN=128 BK=128 SMEM=114688 VDIR=.carry/s47fp8 timeout 200 python3 .carry/harness46.py 6 2>&1 | grep -v "^  sass" | tee $OUT/h47fp8.txt | grep "median\|regis\|error\|Error"
  ;;
esac
case "${PART:-suite}" in
attn47)
  timeout 200 $BIN run --device cuda .carry/attnfwd47.py 2>&1 | grep -v "^\[" > $OUT/attn47_tb.txt
  timeout 200 python3 .carry/attnfwd47.py > $OUT/attn47_triton.txt 2>&1
  paste -d'|' $OUT/attn47_tb.txt $OUT/attn47_triton.txt | sed 's/TFLOPS//g'
  ;;
esac
case "${PART:-suite}" in
attn47ab)
  xz -dc .carry/tilebook_old.xz > /tmp/tb/tilebook_old && chmod +x /tmp/tb/tilebook_old
  timeout 120 /tmp/tb/tilebook_old run --device cuda .carry/attnfwd47.py 2>&1 | grep -v "^\[" > $OUT/ab_old1.txt
  timeout 120 $BIN run --device cuda .carry/attnfwd47.py 2>&1 | grep -v "^\[" > $OUT/ab_new1.txt
  timeout 120 python3 .carry/attnfwd47.py > $OUT/ab_triton.txt 2>&1
  timeout 120 /tmp/tb/tilebook_old run --device cuda .carry/attnfwd47.py 2>&1 | grep -v "^\[" > $OUT/ab_old2.txt
  timeout 120 $BIN run --device cuda .carry/attnfwd47.py 2>&1 | grep -v "^\[" > $OUT/ab_new2.txt
  timeout 150 $BIN run --device cuda bench/ln_attn_bench.py --check 2>&1 | grep -v "^\[" | tail -5
  paste -d'|' $OUT/ab_old1.txt $OUT/ab_new1.txt $OUT/ab_old2.txt $OUT/ab_new2.txt $OUT/ab_triton.txt | sed 's/ TFLOPS//g; s/|fwd [^:]*:/|/g; s/^fwd //'
  ;;
esac
