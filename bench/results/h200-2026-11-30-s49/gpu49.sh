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
