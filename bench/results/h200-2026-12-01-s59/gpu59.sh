#!/usr/bin/env bash
# Session 58's device calls (copied to .carry/gpu.sh, binary carried as
# .carry/tilebook.xz). PART=probe: ptxas figures of the PTX in .carry/ptx,
# lnbwd58.py under tilebook (twice) and Triton, then the GPU suite
# (TILEBOOK_CHECK_GPU=1, checked bounds). PART=probe2: lnbwd58.py under
# tilebook once per setting in MODES ("-" for none), twice, then the suite.
# PART=suite: the suite alone.
# PART=tables: ROWS=ln_attn bench/run_gpu.sh.
set -u
BIN=/tmp/tilebook
if [ ! -s $BIN ]; then xz -dc .carry/tilebook.xz > $BIN.part && mv $BIN.part $BIN && chmod +x $BIN; fi
sha256sum .carry/tilebook.xz
$BIN --version || { echo "NO WORKING BINARY"; rm -f $BIN; exit 3; }
mkdir -p $OUT
PTXAS=$(python3 -c "import triton,os;print(os.path.join(os.path.dirname(triton.__file__),'backends/nvidia/bin/ptxas'))" 2>/dev/null)
ptxas_all() {
  for f in .carry/ptx/*.ptx; do
    echo "$(basename $f): $($PTXAS -arch=sm_90a -v $f -o /tmp/x.cubin 2>&1 | grep -o 'Used [0-9]* registers\|[0-9]* bytes spill stores\|[0-9]* bytes spill loads\|error.*\|warning.*' | tr '\n' ' ')"
  done | tee $OUT/ptxas.txt
}
suite() {
  timeout ${SUITE_S:-450} tests/gpu/run.sh $BIN > $OUT/suite.txt 2>&1
  echo "suite rc=$?"; grep -v "^ok" $OUT/suite.txt | tail -30; grep -c "^ok" $OUT/suite.txt
}
case "${PART:-probe}" in
probe)
  ptxas_all
  for r in 1 2; do
    echo "== tilebook $r" | tee -a $OUT/lnbwd.txt
    timeout 90 $BIN run --device cuda ${PROBE:-.carry/lnbwd58.py} 2>&1 | grep -v "^\[" | tee -a $OUT/lnbwd.txt
  done
  echo "== triton" | tee -a $OUT/lnbwd.txt
  timeout 90 python3 ${PROBE:-.carry/lnbwd58.py} 2>&1 | tee -a $OUT/lnbwd.txt
  [ -n "${NOSUITE:-}" ] || suite
  ;;
probe2)
  # Environment settings in turn, twice: "-" is none.
  for r in 1 2; do for m in ${MODES:--}; do
    echo "== tilebook $m ($r)" | tee -a $OUT/lnbwd.txt
    if [ "$m" = - ]; then env=(); else env=("$m"); fi
    env "${env[@]}" timeout 90 $BIN run --device cuda ${PROBE:-.carry/lnbwd58.py} 2>&1 | grep -v "^\[" | tee -a $OUT/lnbwd.txt
  done; done
  [ -n "${NOSUITE:-}" ] || suite
  ;;
suite) suite ;;
tables)
  cp .carry/peers.py ../shared/bench/peers.py 2>/dev/null || true
  ROWS=${ROWS:-ln_attn} timeout ${TABLE_S:-500} bench/run_gpu.sh $BIN > $OUT/tables.txt 2>&1; echo "tables rc=$?"; tail -5 $OUT/tables.txt
  ls $OUT
  ;;
esac
