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
