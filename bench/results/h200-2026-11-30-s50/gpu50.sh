ab50)
  PTXAS=$(python3 -c "import triton,os;print(os.path.join(os.path.dirname(triton.__file__),'backends/nvidia/bin/ptxas'))")
  for f in .carry/ptx50/*.ptx; do
    echo "$(basename $f): $($PTXAS -arch=sm_90a -v $f -o /tmp/x.cubin 2>&1 | grep -o 'Used [0-9]* registers\|[0-9]* bytes spill stores\|C7[0-9]*[^:]*' | tr '\n' ' ')"
  done | tee $OUT/ptxas50.txt
  TILEBOOK_SCALED_CAP=1000 timeout 120 $BIN run --device cuda bench/ln_attn_bench.py --check 2>&1 | grep -v "^\[" | tail -5 > $OUT/check_cap.txt; echo "check cap rc=$?"; cat $OUT/check_cap.txt
  for r in 1 2; do
    for cap in 32 1000; do
      TILEBOOK_SCALED_CAP=$cap timeout 150 $BIN run --device cuda .carry/attnfwd50.py 2>&1 | grep -v "^\[" > $OUT/fwd_cap${cap}_$r.txt; echo "cap$cap/$r rc=$?"
    done
  done
  ;;
esac
ab50b)
  PTXAS=$(python3 -c "import triton,os;print(os.path.join(os.path.dirname(triton.__file__),'backends/nvidia/bin/ptxas'))")
  for f in .carry/ptx50/nobr*.ptx; do
    echo "$(basename $f): $($PTXAS -arch=sm_90a -v $f -o /tmp/x.cubin 2>&1 | grep -o 'Used [0-9]* registers\|[0-9]* bytes spill stores\|C7[0-9]*[^:]*' | tr '\n' ' ')"
  done | tee $OUT/ptxas50b.txt
  for r in 1 2; do
    for v in base nobr; do
      e=""; [ $v = nobr ] && e="TILEBOOK_SCALED_CAP=1000 TILEBOOK_SCALED_NOBRANCH=1"
      env $e timeout 150 $BIN run --device cuda .carry/attnfwd50.py 2>&1 | grep -v "^\[" > $OUT/fwd_${v}_$r.txt; echo "$v/$r rc=$?"
    done
  done
  ;;
esac
suite)
  TILEBOOK_CHECK_GPU=1 timeout 400 tests/gpu/run.sh $BIN > $OUT/suite.txt 2>&1; echo "suite rc=$?" >> $OUT/suite.txt
  tail -3 $OUT/suite.txt
  ;;
esac
tables)
  for r in ${TABLES:-base ln_attn}; do
    mkdir -p /tmp/t/$r
    OUT=/tmp/t/$r ROWS=$r timeout 280 bench/run_gpu.sh $BIN > /tmp/t/$r/run_gpu_output.txt 2>&1; echo "$r rc=$?"
    grep ratio /tmp/t/$r/run_gpu_output.txt | sed 's/  (higher is better)//; s/  (lower is better)//' | cut -c1-120
  done
  tar -C /tmp/t -cJf $OUT/tables.tar.xz .
  ;;
esac
