anomaly49)
  timeout 120 $BIN run --device cuda .carry/anomaly49.py 2>&1 | grep -v "^\[" | sed 's/^/tilebook /'
  timeout 120 python3 .carry/anomaly49.py 2>&1 | sed 's/^/triton /'
  ;;
fp8sweep49)
  cat tests/ir/matmul.py .carry/fp8sweep49.py > /tmp/fp8sweep49.py
  timeout 250 $BIN run --device cuda /tmp/fp8sweep49.py 2>&1 | grep -v "^\[" | sed 's/^/tilebook /' | tee $OUT/fp8sweep_tilebook.txt
  timeout 250 python3 /tmp/fp8sweep49.py 2>&1 | sed 's/^/triton /' | tee $OUT/fp8sweep_triton.txt
  ;;
attnbwd49)
  cat bench/ln_attn_kernels.py .carry/attnbwd49.py > /tmp/attnbwd49.py
  timeout 280 $BIN run --device cuda /tmp/attnbwd49.py 2>&1 | grep -v "^\[" | sed 's/^/tilebook /' > $OUT/attnbwd_tilebook.txt
  timeout 280 python3 /tmp/attnbwd49.py 2>&1 | sed 's/^/triton /' > $OUT/attnbwd_triton.txt
  tail -3 $OUT/attnbwd_tilebook.txt $OUT/attnbwd_triton.txt
  ;;
ab49)
  xz -dc .carry/tilebook_old.xz > /tmp/tb/tilebook_old && chmod +x /tmp/tb/tilebook_old
  for r in 1 2; do
    for b in new old; do
      B=$BIN; [ $b = old ] && B=/tmp/tb/tilebook_old
      timeout 200 $B run --device cuda .carry/attnfwd49.py 2>&1 | grep -v "^\[" > $OUT/fwd_${b}$r.txt; echo "$b$r rc=$?"
    done
  done
  timeout 200 python3 .carry/attnfwd49.py > $OUT/fwd_triton.txt 2>&1; echo "triton rc=$?"
  ;;
ptxas49)
  PTXAS=$(python3 -c "import triton,os;print(os.path.join(os.path.dirname(triton.__file__),'backends/nvidia/bin/ptxas'))")
  for f in .carry/ptx49/*.ptx; do
    for r in 0 168 128; do
      o=""; [ $r != 0 ] && o="-maxrregcount $r"
      echo "$(basename $f) cap=$r: $($PTXAS -arch=sm_90a -v $o $f -o /tmp/x.cubin 2>&1 | grep -o 'Used [0-9]* registers\|[0-9]* bytes spill stores\|C7[0-9]*[^:]*' | tr '\n' ' ')"
    done
  done | tee $OUT/ptxas49.txt
  ;;
