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
suite) suite ;;
tables)
  cp .carry/peers.py ../shared/bench/peers.py 2>/dev/null || true
  ROWS=${ROWS:-ln_attn} timeout ${TABLE_S:-500} bench/run_gpu.sh $BIN > $OUT/tables.txt 2>&1; echo "tables rc=$?"; tail -5 $OUT/tables.txt
  ls $OUT
  ;;
esac
