#!/usr/bin/env bash
# Session 65's device calls (binary carried as .carry/tilebook.xz).
set -u
BIN=/tmp/tilebook
if [ ! -s $BIN ]; then xz -dc .carry/tilebook.xz > $BIN.part && mv $BIN.part $BIN && chmod +x $BIN; fi
$BIN --version || { echo "NO WORKING BINARY"; rm -f $BIN; exit 3; }
mkdir -p $OUT
t=$(mktemp -d)
suite() {
  timeout ${SUITE_S:-450} tests/gpu/run.sh $BIN > $OUT/suite.txt 2>&1
  echo "suite rc=$?"; grep -v "^ok" $OUT/suite.txt | tail -30; grep -c "^ok" $OUT/suite.txt
}
check() {
  cat tests/ir/matmul.py tests/ir/softmax.py tests/gpu/pointer_tma.py > $t/pt.py
  echo "== pointer_tma checked" | tee -a $OUT/check.txt
  TILEBOOK_CHECK_GPU=1 timeout 200 $BIN run --device cuda $t/pt.py 2>&1 | grep -v "^\[" | tail -30 | tee -a $OUT/check.txt; echo "rc=${PIPESTATUS[0]}" | tee -a $OUT/check.txt
  cat tests/ir/matmul.py tests/ir/softmax.py tests/gpu/tma.py > $t/tma.py
  echo "== tma.py checked" | tee -a $OUT/check.txt
  TILEBOOK_CHECK_GPU=1 timeout 200 $BIN run --device cuda $t/tma.py 2>&1 | grep -v "^\[" | tail -25 | tee -a $OUT/check.txt; echo "rc=${PIPESTATUS[0]}" | tee -a $OUT/check.txt
}
ab() {
  # A/B of the bulk store per dtype: P8ST_DT, P8ST_CFG, P8ST_SLOTS, ST set by the caller
  cat tests/ir/matmul.py .carry/p8st.py > $t/ps.py
  for r in ${RUNS:-1 2}; do
  echo "== $P8ST_DT bulk store run $r" | tee -a $OUT/ab.txt
  TILEBOOK_CACHE_DIR=$(mktemp -d) timeout 100 $BIN run --device cuda $t/ps.py 2>&1 | grep -v "^\[" | tee -a $OUT/ab.txt
  echo "== $P8ST_DT per-thread store run $r" | tee -a $OUT/ab.txt
  TILEBOOK_POINTER_BULK_STORE=0 TILEBOOK_CACHE_DIR=$(mktemp -d) timeout 100 $BIN run --device cuda $t/ps.py 2>&1 | grep -v "^\[" | tee -a $OUT/ab.txt
  done
  echo "== $P8ST_DT bulk store stamped" | tee -a $OUT/ab.txt
  TILEBOOK_PTX_OVERRIDE=$PWD/.carry/$ST TILEBOOK_CACHE_DIR=$(mktemp -d) timeout 100 $BIN run --device cuda $t/ps.py 2>&1 | grep -v "^\[" | tee -a $OUT/ab.txt
  echo "== $P8ST_DT triton plain" | tee -a $OUT/ab.txt
  timeout 100 python3 $t/ps.py 2>&1 | tee -a $OUT/ab.txt
}
case "${PART:-check}" in
check) check
  P8ST_DT=fp16 P8ST_CFG="128 256 64 8 3" P8ST_SLOTS=1 ST=st16 ab
  P8ST_DT=fp8 P8ST_CFG="128 128 128 8 3" P8ST_SLOTS=2 ST=st8 ab ;;
suite) suite ;;
tables)
  cp .carry/peers.py ../shared/bench/peers.py 2>/dev/null || true
  ROWS=${ROWS:-all} timeout ${TABLE_S:-500} bench/run_gpu.sh $BIN > $OUT/tables.txt 2>&1; echo "tables rc=$?"; tail -5 $OUT/tables.txt
  ls $OUT ;;
esac
