rot48)
  for r in 1 2; do
    timeout 100 $BIN run --device cuda .carry/attnfwd48.py 2>&1 | grep -v "^\[" > $OUT/rot_on$r.txt
    TILEBOOK_ROTATE_DOTS=0 timeout 100 $BIN run --device cuda .carry/attnfwd48.py 2>&1 | grep -v "^\[" > $OUT/rot_off$r.txt
  done
  timeout 100 python3 .carry/attnfwd48.py > $OUT/rot_triton.txt 2>&1
  paste -d'|' $OUT/rot_on1.txt $OUT/rot_off1.txt $OUT/rot_on2.txt $OUT/rot_off2.txt $OUT/rot_triton.txt | sed 's/ TFLOPS//g; s/|fwd [^:]*:/|/g; s/^fwd //'
  ;;
cfg48)
  timeout 100 $BIN run --device cuda .carry/attnfwd48.py 2>&1 | grep -v "^\[" > $OUT/new48.txt
  timeout 200 $BIN run --device cuda .carry/attnfwd48b.py 2>&1 | grep -v "^\[" > $OUT/extra_tb.txt
  timeout 200 python3 .carry/attnfwd48b.py > $OUT/extra_triton.txt 2>&1
  cat $OUT/new48.txt
  paste -d'|' $OUT/extra_tb.txt $OUT/extra_triton.txt | sed 's/ TFLOPS//g; s/|fwd [^:]*:/|/g; s/^fwd //'
  ;;
cfg48c)
  timeout 250 $BIN run --device cuda .carry/attn48c.py 2>&1 | grep -v "^\[" > $OUT/c_tb.txt
  timeout 250 python3 .carry/attn48c.py > $OUT/c_triton.txt 2>&1
  paste -d'|' $OUT/c_tb.txt $OUT/c_triton.txt | sed 's/ TFLOPS//g; s/|[fb]wd [^:]*:/|/g'
  ;;
suite)
  TILEBOOK_CHECK_GPU=1 timeout 400 tests/gpu/run.sh $BIN > $OUT/suite.txt 2>&1; echo "suite rc=$?" >> $OUT/suite.txt
  tail -3 $OUT/suite.txt
  ;;
tables)
  for r in ${TABLES:-base ln_attn}; do
    mkdir -p /tmp/t/$r
    OUT=/tmp/t/$r ROWS=$r timeout 280 bench/run_gpu.sh $BIN > /tmp/t/$r/run_gpu_output.txt 2>&1; echo "$r rc=$?"
    grep ratio /tmp/t/$r/run_gpu_output.txt | sed 's/  (higher is better)//; s/  (lower is better)//' | cut -c1-120
  done
  tar -C /tmp/t -cJf $OUT/tables.tar.xz .
  ;;
host48)
  timeout 100 $BIN run --device cuda .carry/host48.py 2>&1 | grep -v "^\[" | tee $OUT/host_tb.txt
  timeout 100 python3 .carry/host48.py 2>&1 | tee $OUT/host_triton.txt
  ;;
lazy48)
  xz -dc .carry/tilebook_old.xz > /tmp/tb/tilebook_old && chmod +x /tmp/tb/tilebook_old
  timeout 150 $BIN run --device cuda bench/ln_attn_bench.py --check 2>&1 | grep -v "^\[" | tail -4
  PTXAS=$(python3 -c "import triton, os; print(os.path.join(os.path.dirname(triton.__file__), 'backends/nvidia/bin/ptxas'))")
  for kern in attn_bwd_kv:"*fp16:16, *fp16:16, *fp16:16, *fp16:16, *fp16:16, *fp16:16, *fp32:16, *fp32:16, fp32, i32:16" attn_bwd_q:"*fp16:16, *fp16:16, *fp16:16, *fp16:16, *fp16:16, *fp32:16, *fp32:16, fp32, i32:16"; do
    name=${kern%%:*}; sig=${kern#*:}
    for d in 64 128; do
      $BIN compile bench/ln_attn_kernels.py --kernel $name --signature "$sig, D=$d, BLOCK_M=64, BLOCK_N=64, CAUSAL=1, num_warps=4, num_stages=2" --emit ptx --target sm_90a -o /tmp/$name$d.ptx
      $PTXAS -arch=sm_90a -v /tmp/$name$d.ptx -o /tmp/$name$d.cubin 2>&1 | grep -v "^ptxas info    : Compiling\|Function properties" | tee -a $OUT/ptxas.txt
    done
  done
  for r in 1 2; do
    timeout 120 /tmp/tb/tilebook_old run --device cuda .carry/attnbwd48.py 2>&1 | grep -v "^\[" > $OUT/bwd_old$r.txt
    timeout 120 $BIN run --device cuda .carry/attnbwd48.py 2>&1 | grep -v "^\[" > $OUT/bwd_new$r.txt
  done
  timeout 120 python3 .carry/attnbwd48.py > $OUT/bwd_triton.txt 2>&1
  paste -d'|' $OUT/bwd_old1.txt $OUT/bwd_new1.txt $OUT/bwd_old2.txt $OUT/bwd_new2.txt $OUT/bwd_triton.txt | sed 's/ TFLOPS//g; s/|bwd [^:]*:/|/g; s/^bwd //'
  ;;
lazy48b)
  xz -dc .carry/tilebook_old.xz > /tmp/tb/tilebook_old && chmod +x /tmp/tb/tilebook_old
  PTXAS=$(python3 -c "import triton, os; print(os.path.join(os.path.dirname(triton.__file__), 'backends/nvidia/bin/ptxas'))")
  for kern in attn_bwd_kv:"*fp16:16, *fp16:16, *fp16:16, *fp16:16, *fp16:16, *fp16:16, *fp32:16, *fp32:16, fp32, i32:16" attn_bwd_q:"*fp16:16, *fp16:16, *fp16:16, *fp16:16, *fp16:16, *fp32:16, *fp32:16, fp32, i32:16"; do
    name=${kern%%:*}; sig=${kern#*:}
    for d in 64 128; do for c in 0 1; do for v in old new nohoist; do
      B=$BIN; [ $v = old ] && B=/tmp/tb/tilebook_old
      H=1; [ $v = nohoist ] && H=0
      TILEBOOK_HOIST_DOTS=$H $B compile bench/ln_attn_kernels.py --kernel $name --signature "$sig, D=$d, BLOCK_M=64, BLOCK_N=64, CAUSAL=$c, num_warps=4, num_stages=2" --emit ptx --target sm_90a -o /tmp/k.ptx
      echo "$name D=$d causal=$c $v: $($PTXAS -arch=sm_90a -v /tmp/k.ptx -o /tmp/k.cubin 2>&1 | grep -o 'Used [0-9]* registers\|[0-9]* bytes spill stores\|warning.*' | tr '\n' ' ')" | tee -a $OUT/regs.txt
    done; done; done
  done
  for r in 1 2; do
    timeout 100 /tmp/tb/tilebook_old run --device cuda .carry/attnbwd48b.py 2>&1 | grep -v "^\[" > $OUT/b_old$r.txt
    timeout 100 $BIN run --device cuda .carry/attnbwd48b.py 2>&1 | grep -v "^\[" > $OUT/b_new$r.txt
    TILEBOOK_HOIST_DOTS=0 timeout 100 $BIN run --device cuda .carry/attnbwd48b.py 2>&1 | grep -v "^\[" > $OUT/b_nohoist$r.txt
  done
  paste -d'|' $OUT/b_old1.txt $OUT/b_new1.txt $OUT/b_nohoist1.txt $OUT/b_old2.txt $OUT/b_new2.txt $OUT/b_nohoist2.txt | sed 's/ TFLOPS//g; s/|bwd [^:]*:/|/g; s/^bwd //'
  ;;
ptx48)
  PTXAS=$(python3 -c "import triton, os; print(os.path.join(os.path.dirname(triton.__file__), 'backends/nvidia/bin/ptxas'))")
  for f in .carry/ptx48/*.ptx; do echo "$f: $($PTXAS -arch=sm_90a -v $f -o /tmp/k.cubin 2>&1 | grep -o 'Used [0-9]* registers\|[0-9]* bytes spill stores\|warning.*' | tr '\n' ' ')"; done
  ;;
lazy48c)
  xz -dc .carry/tilebook_old.xz > /tmp/tb/tilebook_old && chmod +x /tmp/tb/tilebook_old
  for r in 1 2; do
    timeout 100 /tmp/tb/tilebook_old run --device cuda .carry/attnbwd48b.py 2>&1 | grep -v "^\[" > $OUT/c_old$r.txt
    timeout 100 $BIN run --device cuda .carry/attnbwd48b.py 2>&1 | grep -v "^\[" > $OUT/c_new$r.txt
  done
  paste -d'|' $OUT/c_old1.txt $OUT/c_new1.txt $OUT/c_old2.txt $OUT/c_new2.txt | sed 's/ TFLOPS//g; s/|bwd [^:]*:/|/g; s/^bwd //'
  ;;
final48)
  xz -dc .carry/tilebook_old.xz > /tmp/tb/tilebook_old && chmod +x /tmp/tb/tilebook_old
  timeout 40 /tmp/tb/tilebook_old run --device cuda .carry/attnbwd48c.py 2>&1 | grep -v "^\[" > $OUT/d_old1.txt
  timeout 40 $BIN run --device cuda .carry/attnbwd48c.py 2>&1 | grep -v "^\[" > $OUT/d_new1.txt
  paste -d'|' $OUT/d_old1.txt $OUT/d_new1.txt
  ;;
