#!/usr/bin/env bash
# Session 64's device calls (binary carried as .carry/tilebook.xz).
set -u
STAMP_OFF=33554432
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
stamps)
  # per-program timestamps of the fp8 tile: ours through TILEBOOK_PTX_OVERRIDE
  # (.carry/st_ours/matmul_kernel.ptx, instrumented with stamps.py before the call),
  # Triton's through TRITON_KERNEL_OVERRIDE after a dump of its own PTX
  cat tests/ir/matmul.py .carry/p8st.py > $t/ps.py
  for r in ${RUNS:-1}; do
  echo "== tilebook plain run $r" | tee -a $OUT/stamps.txt
  TILEBOOK_CACHE_DIR=$(mktemp -d) timeout 100 $BIN run --device cuda $t/ps.py 2>&1 | grep -v "^\[matmul" | tee -a $OUT/stamps.txt
  echo "== tilebook stamped run $r" | tee -a $OUT/stamps.txt
  TILEBOOK_PTX_OVERRIDE=$PWD/.carry/${ST:-st_ours} TILEBOOK_CACHE_DIR=$(mktemp -d) timeout 100 $BIN run --device cuda $t/ps.py 2>&1 | grep -v "^\[matmul" | tee -a $OUT/stamps.txt
  done
  echo "== triton plain (dump)" | tee -a $OUT/stamps.txt
  TRITON_KERNEL_DUMP=1 TRITON_DUMP_DIR=$t/td TRITON_CACHE_DIR=$t/tc1 timeout 100 python3 $t/ps.py 2>&1 | tee -a $OUT/stamps.txt
  ls -R $t/td | head -20
  mkdir -p $t/tov $OUT/triton_ptx
  for f in $t/td/*/matmul_kernel.ptx; do d=$(basename $(dirname $f)); mkdir -p $t/tov/$d; python3 .carry/stamps.py $f $t/tov/$d/matmul_kernel.ptx 2 $STAMP_OFF; cp $f $OUT/triton_ptx/$d.ptx; done
  for r in ${RUNS:-1}; do
  echo "== triton stamped run $r" | tee -a $OUT/stamps.txt
  TRITON_KERNEL_OVERRIDE=1 TRITON_OVERRIDE_DIR=$t/tov TRITON_CACHE_DIR=$(mktemp -d) timeout 100 python3 $t/ps.py 2>&1 | tee -a $OUT/stamps.txt
  done
  ;;
epi)
  cat tests/ir/matmul.py tests/ir/softmax.py tests/gpu/pointer_tma.py > $t/pt.py
  echo "== pointer_tma checked" | tee -a $OUT/epi.txt
  TILEBOOK_CHECK_GPU=1 timeout 200 $BIN run --device cuda $t/pt.py 2>&1 | grep -v "^\[" | tail -30 | tee -a $OUT/epi.txt; echo "rc=${PIPESTATUS[0]}" | tee -a $OUT/epi.txt
  cat tests/ir/matmul.py tests/ir/softmax.py tests/gpu/tma.py > $t/tma.py
  echo "== tma.py checked" | tee -a $OUT/epi.txt
  TILEBOOK_CHECK_GPU=1 timeout 200 $BIN run --device cuda $t/tma.py 2>&1 | grep -v "^\[" | tail -25 | tee -a $OUT/epi.txt; echo "rc=${PIPESTATUS[0]}" | tee -a $OUT/epi.txt
  cat tests/ir/matmul.py .carry/p8st.py > $t/ps.py
  for r in ${RUNS:-1 2}; do
  echo "== tilebook plain run $r" | tee -a $OUT/epi.txt
  TILEBOOK_CACHE_DIR=$(mktemp -d) timeout 100 $BIN run --device cuda $t/ps.py 2>&1 | grep -v "^\[" | tee -a $OUT/epi.txt
  echo "== tilebook stamped ${ST:-st_ours2} run $r" | tee -a $OUT/epi.txt
  TILEBOOK_PTX_OVERRIDE=$PWD/.carry/${ST:-st_ours2} TILEBOOK_CACHE_DIR=$(mktemp -d) timeout 100 $BIN run --device cuda $t/ps.py 2>&1 | grep -v "^\[" | tee -a $OUT/epi.txt
  done
  echo "== triton plain" | tee -a $OUT/epi.txt
  timeout 100 python3 $t/ps.py 2>&1 | tee -a $OUT/epi.txt
  ;;
suite) suite ;;
tables)
  cp .carry/peers.py ../shared/bench/peers.py 2>/dev/null || true
  ROWS=${ROWS:-ln_attn} timeout ${TABLE_S:-500} bench/run_gpu.sh $BIN > $OUT/tables.txt 2>&1; echo "tables rc=$?"; tail -5 $OUT/tables.txt
  ls $OUT
  ;;
esac
