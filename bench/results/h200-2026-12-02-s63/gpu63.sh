#!/usr/bin/env bash
# Session 62's device calls (binary carried as .carry/tilebook.xz).
# PART=probe: fence A/B (TILEBOOK_BULK_FENCE=1 puts the proxy fence back in
# all-bulk wgmma loops) on probe62.py, twice each, then Triton on it (its fp8
# PTX kept), then power62.py under both with nvidia-smi sampling.
# PART=late: tests/gpu/pointer_tma.py checked against the CPU backend, then
# probe62.py with TILEBOOK_LATE_REFILL 1/0 twice, then Triton on it.
# PART=suite: tests/gpu/run.sh with TILEBOOK_CHECK_GPU=1.
# PART=tables: ROWS=... bench/run_gpu.sh.
set -u
BIN=/tmp/tilebook
if [ ! -s $BIN ]; then xz -dc .carry/tilebook.xz > $BIN.part && mv $BIN.part $BIN && chmod +x $BIN; fi
sha256sum .carry/tilebook.xz
$BIN --version || { echo "NO WORKING BINARY"; rm -f $BIN; exit 3; }
mkdir -p $OUT
t=$(mktemp -d)
suite() {
  timeout ${SUITE_S:-450} tests/gpu/run.sh $BIN > $OUT/suite.txt 2>&1
  echo "suite rc=$?"; grep -v "^ok" $OUT/suite.txt | tail -30; grep -c "^ok" $OUT/suite.txt
}
case "${PART:-probe}" in
probe)
  cat tests/ir/matmul.py .carry/probe62.py > $t/p.py
  [ -n "${SKIP_AB:-}" ] || for r in 1 2; do for m in 0 1; do
    echo "== tilebook BULK_FENCE=$m run $r" | tee -a $OUT/ab.txt
    if [ $m = 1 ]; then export TILEBOOK_BULK_FENCE=1; else unset TILEBOOK_BULK_FENCE; fi
    TILEBOOK_CACHE_DIR=$(mktemp -d) timeout 150 $BIN run --device cuda $t/p.py 2>&1 | grep -v "^\[" | tee -a $OUT/ab.txt
  done; done
  unset TILEBOOK_BULK_FENCE
  [ -n "${SKIP_AB:-}" ] || { echo "== triton" | tee -a $OUT/ab.txt
  TRITON_CACHE_DIR=$t/tc timeout 150 python3 $t/p.py 2>&1 | tee -a $OUT/ab.txt; }
  mkdir -p $OUT/triton_ptx
  for f in $(grep -l "e5m2" $t/tc/*/*.ptx 2>/dev/null); do d=$(basename $(dirname $f)); cp $f $OUT/triton_ptx/$d.ptx; done
  cat tests/ir/matmul.py .carry/power62.py > $t/w.py
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv -lms 100 > $OUT/smi.csv 2>&1 &
  smi=$!
  [ -n "${SKIP_AB:-}" ] || true
  timeout 100 $BIN run --device cuda $t/w.py 2>&1 | grep -v "^\[" | tee -a $OUT/power.txt
  sleep 2
  timeout 100 python3 $t/w.py triton 2>&1 | tee -a $OUT/power.txt
  kill $smi
  ;;
late)
  cat tests/ir/matmul.py tests/ir/softmax.py tests/gpu/pointer_tma.py > $t/pt.py
  echo "== pointer_tma checked" | tee -a $OUT/late.txt
  TILEBOOK_CHECK_GPU=1 timeout 200 $BIN run --device cuda $t/pt.py 2>&1 | grep -v "^\[" | tail -40 | tee -a $OUT/late.txt
  cat tests/ir/matmul.py .carry/probe62.py > $t/p.py
  for r in 1 2; do for m in 1 0; do
    echo "== tilebook LATE_REFILL=$m run $r" | tee -a $OUT/late.txt
    TILEBOOK_LATE_REFILL=$m TILEBOOK_CACHE_DIR=$(mktemp -d) timeout 150 $BIN run --device cuda $t/p.py 2>&1 | grep -v "^\[" | tee -a $OUT/late.txt
  done; done
  echo "== triton" | tee -a $OUT/late.txt
  timeout 150 python3 $t/p.py 2>&1 | tee -a $OUT/late.txt
  ;;
ncu)
  NCU=/usr/local/cuda/bin/ncu
  TB=$(python3 -c "import triton,os;print(os.path.join(os.path.dirname(triton.__file__),'backends/nvidia/bin'))")
  cat tests/ir/matmul.py .carry/p8.py > $t/p8.py
  echo "== tilebook plain" | tee -a $OUT/ncu.txt
  P8_ROUNDS=3 P8_ALL=1 TILEBOOK_CACHE_DIR=$(mktemp -d) timeout 100 $BIN run --device cuda $t/p8.py 2>&1 | grep -v "^\[" | tee -a $OUT/ncu.txt
  echo "== triton plain" | tee -a $OUT/ncu.txt
  P8_ROUNDS=3 P8_ALL=1 TRITON_CACHE_DIR=$t/tc timeout 100 python3 $t/p8.py 2>&1 | tee -a $OUT/ncu.txt
  M="gpu__time_duration.sum,sm__cycles_elapsed.avg,smsp__inst_executed.sum,launch__registers_per_thread,launch__shared_mem_per_block_dynamic,launch__shared_mem_per_block_static,launch__occupancy_limit_shared_mem,launch__occupancy_limit_registers,sm__warps_active.avg.pct_of_peak_sustained_active,dram__bytes_read.sum,lts__t_sector_hit_rate.pct,sm__ctas_launched.sum"
  M="$M,regex:^sm__pipe_.*(tensor|gmma).*_cycles_active\.avg\.pct_of_peak_sustained_active$"
  M="$M,regex:^smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio$"
  for who in tilebook triton; do
    if [ $who = tilebook ]; then cmd="$BIN run --device cuda $t/p8.py"; else cmd="python3 $t/p8.py"; fi
    TILEBOOK_CACHE_DIR=$(mktemp -d) TRITON_CACHE_DIR=$(mktemp -d) timeout 200 $NCU --target-processes all -k regex:matmul --launch-skip 3 --launch-count 1 --metrics "$M" $cmd > $OUT/ncu_$who.txt 2>&1
    echo "ncu $who rc=$?"; grep -E "matmul|duration|cycles_elapsed|tensor|gmma|registers|occupancy|warps_active|stalled_(barrier|long|wait|math|dispatch|short|mio|lg|membar|sleep|no_inst|branch|selected|not_sel)" $OUT/ncu_$who.txt | grep -v PROF | head -60
  done
  mkdir -p $OUT/sass
  for f in $(grep -l "e5m2" $t/tc/*/*.ptx 2>/dev/null); do d=$(basename $(dirname $f)); cp $f $OUT/sass/triton_$d.ptx; cp $(dirname $f)/*.cubin $OUT/sass/triton_$d.cubin 2>/dev/null; $TB/cuobjdump -sass $(dirname $f)/*.cubin > $OUT/sass/triton_$d.sass 2>&1; done
  for f in .carry/ours*.ptx; do [ -f $f ] || continue; n=$(basename $f .ptx); $TB/ptxas -arch=sm_90a -v $f -o $t/$n.cubin > $OUT/sass/$n.ptxas.txt 2>&1; $TB/cuobjdump -sass $t/$n.cubin > $OUT/sass/$n.sass 2>&1; done
  xz -T4 -6 $OUT/sass/*.sass
  ;;
addr)
  cat tests/ir/matmul.py .carry/${PROBE:-p8addr}.py > $t/pa.py
  for r in 1 2; do echo "== tilebook run $r" | tee -a $OUT/addr.txt
    TILEBOOK_CACHE_DIR=$(mktemp -d) timeout 150 $BIN run --device cuda $t/pa.py 2>&1 | grep -v "^\[" | tee -a $OUT/addr.txt; done
  echo "== triton" | tee -a $OUT/addr.txt
  timeout 150 python3 $t/pa.py 2>&1 | tee -a $OUT/addr.txt
  ;;
ws)
  TB=$(python3 -c "import triton,os;print(os.path.join(os.path.dirname(triton.__file__),'backends/nvidia/bin'))")
  for f in .carry/ws*/matmul_kernel.ptx; do echo "== ptxas $f"; $TB/ptxas -arch=sm_90a -v $f -o $t/ws.cubin 2>&1 | grep -v "^$" | tail -4; done
  cat tests/ir/matmul.py .carry/p8.py > $t/p8.py
  for r in 1 2; do for m in ${WS_DIRS:-ws} none; do
    echo "== tilebook override=$m run $r" | tee -a $OUT/ws.txt
    if [ $m = none ]; then unset TILEBOOK_PTX_OVERRIDE; else export TILEBOOK_PTX_OVERRIDE=$PWD/.carry/$m; fi
    P8_ROUNDS=3 TILEBOOK_CACHE_DIR=$(mktemp -d) timeout 100 $BIN run --device cuda $t/p8.py 2>&1 | grep -v "^\[matmul" | tee -a $OUT/ws.txt
  done; done
  unset TILEBOOK_PTX_OVERRIDE
  echo "== triton" | tee -a $OUT/ws.txt
  P8_ROUNDS=3 timeout 100 python3 $t/p8.py 2>&1 | tee -a $OUT/ws.txt
  ;;
san)
  cat tests/ir/matmul.py .carry/p8.py > $t/p8.py
  export TILEBOOK_PTX_OVERRIDE=$PWD/.carry/${WS_DIR:-ws}
  P8_S=512 TILEBOOK_CACHE_DIR=$(mktemp -d) timeout 200 /usr/local/cuda/bin/compute-sanitizer --target-processes all --tool memcheck --print-limit 5 $BIN run --device cuda $t/p8.py 2>&1 | tail -60 | tee $OUT/san.txt
  ;;
launch)
  python3 .carry/rawlaunch.py 2>&1 | tee $OUT/raw.txt
  for r in ${RUNS:-1 2}; do for m in ${ORDER:-own legacy}; do
    echo "== TILEBOOK_STREAM=$m run $r" | tee -a $OUT/launch.txt
    TILEBOOK_STREAM=$m timeout 100 $BIN run --device cuda bench/launch_probe.py 2>&1 | grep -v "^\[" | tee -a $OUT/launch.txt
  done; done
  ;;
kscan)
  cat tests/ir/matmul.py .carry/p8k.py > $t/pk.py
  for who in tilebook triton tilebook triton; do echo "== $who" | tee -a $OUT/kscan.txt
    if [ $who = tilebook ]; then TILEBOOK_CACHE_DIR=$(mktemp -d) timeout 120 $BIN run --device cuda $t/pk.py 2>&1 | grep -v "^\[" | tee -a $OUT/kscan.txt
    else timeout 120 python3 $t/pk.py 2>&1 | tee -a $OUT/kscan.txt; fi
  done
  ;;
ncusrc)
  NCU=/usr/local/cuda/bin/ncu
  cat tests/ir/matmul.py .carry/p8.py > $t/p8.py
  for who in tilebook triton; do
    if [ $who = tilebook ]; then cmd="$BIN run --device cuda $t/p8.py"; else cmd="python3 $t/p8.py"; fi
    TILEBOOK_CACHE_DIR=$(mktemp -d) TRITON_CACHE_DIR=$(mktemp -d) timeout 250 $NCU --target-processes all -k regex:matmul --launch-skip 3 --launch-count 1 --section SourceCounters --section WarpStateStats --page source --print-source sass --csv $cmd > $OUT/src_$who.csv 2>&1
    echo "ncu $who rc=$?"; python3 .carry/ncuparse.py $OUT/src_$who.csv 0.01 $who 2>&1 | head -60
  done
  xz -T4 -6 $OUT/*.csv
  ;;
vars)
  cat tests/ir/matmul.py .carry/p8k.py > $t/pk.py
  for r in 1 2; do for m in none ${VARS}; do
    echo "== variant $m run $r" | tee -a $OUT/vars.txt
    if [ $m = none ]; then unset TILEBOOK_PTX_OVERRIDE; else export TILEBOOK_PTX_OVERRIDE=$PWD/.carry/$m; fi
    P8K_ROUNDS=1 P8K_KS="512 2048 4096" TILEBOOK_CACHE_DIR=$(mktemp -d) timeout 100 $BIN run --device cuda $t/pk.py 2>&1 | grep -v "^\[" | tee -a $OUT/vars.txt
  done; done
  unset TILEBOOK_PTX_OVERRIDE
  echo "== triton" | tee -a $OUT/vars.txt
  P8K_ROUNDS=1 P8K_KS="512 2048 4096" timeout 100 python3 $t/pk.py 2>&1 | tee -a $OUT/vars.txt
  ;;
guard)
  cat tests/ir/matmul.py tests/ir/softmax.py tests/gpu/pointer_tma.py > $t/pt.py
  echo "== pointer_tma checked" | tee -a $OUT/guard.txt
  TILEBOOK_CHECK_GPU=1 timeout 200 $BIN run --device cuda $t/pt.py 2>&1 | grep -v "^\[" | tail -30 | tee -a $OUT/guard.txt; echo "rc=${PIPESTATUS[0]}" | tee -a $OUT/guard.txt
  cat tests/ir/matmul.py tests/ir/softmax.py tests/gpu/tma.py > $t/tma.py
  echo "== tma.py checked" | tee -a $OUT/guard.txt
  TILEBOOK_CHECK_GPU=1 timeout 200 $BIN run --device cuda $t/tma.py 2>&1 | grep -v "^\[" | tail -25 | tee -a $OUT/guard.txt; echo "rc=${PIPESTATUS[0]}" | tee -a $OUT/guard.txt
  { echo "SEED = 7"; cat tests/conformance/prelude.py tests/conformance/descriptors.py; } > $t/desc.py
  echo "== descriptors unchecked bounds, checked against CPU" | tee -a $OUT/guard.txt
  TILEBOOK_CHECK_GPU=1 timeout 200 $BIN run --device cuda $t/desc.py 2>&1 | grep -v "^\[" | tail -8 | tee -a $OUT/guard.txt; echo "rc=${PIPESTATUS[0]}" | tee -a $OUT/guard.txt
  cat tests/ir/matmul.py .carry/p8k.py > $t/pk.py
  for r in 1 2 3; do echo "== kscan run $r" | tee -a $OUT/guard.txt
    P8K_ROUNDS=1 P8K_KS="512 2048 4096 8192" TILEBOOK_CACHE_DIR=$(mktemp -d) timeout 100 $BIN run --device cuda $t/pk.py 2>&1 | grep -v "^\[" | tee -a $OUT/guard.txt
  done
  echo "== triton" | tee -a $OUT/guard.txt
  P8K_ROUNDS=1 P8K_KS="512 2048 4096 8192" timeout 100 python3 $t/pk.py 2>&1 | tee -a $OUT/guard.txt
  ;;
suite) suite ;;
tables)
  cp .carry/peers.py ../shared/bench/peers.py 2>/dev/null || true
  ROWS=${ROWS:-ln_attn} timeout ${TABLE_S:-500} bench/run_gpu.sh $BIN > $OUT/tables.txt 2>&1; echo "tables rc=$?"; tail -5 $OUT/tables.txt
  ls $OUT
  ;;
esac
