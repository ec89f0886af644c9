#!/usr/bin/env bash
# Session 57's device call: ptxas figures of the layer-norm backward's rows
# kernel (8 and 16 warps; masked only, or with the unmasked version; branched
# or predicated stores), then maskver57.py under Triton and under tilebook
# with TILEBOOK_MASK_VERSIONS=0/1/2, alternating (call 1); MODES="0 3 4 ..."
# runs those modes only (call 2: the unmasked copy keeping constant masks).
set -u
BIN=/tmp/tilebook
if [ ! -s $BIN ]; then xz -dc .carry/tilebook.xz > $BIN.part && mv $BIN.part $BIN && chmod +x $BIN; fi
sha256sum .carry/tilebook.xz
$BIN --version || { echo "NO WORKING BINARY"; rm -f $BIN; exit 3; }
mkdir -p $OUT
PTXAS=$(python3 -c "import triton,os;print(os.path.join(os.path.dirname(triton.__file__),'backends/nvidia/bin/ptxas'))" 2>/dev/null)
for f in .carry/ptx/*.ptx; do
  echo "$(basename $f): $($PTXAS -arch=sm_90a -v $f -o /tmp/x.cubin 2>&1 | grep -o 'Used [0-9]* registers\|[0-9]* bytes spill stores\|error.*' | tr '\n' ' ')"
done | tee $OUT/ptxas.txt
run_mode() {
  echo "== TILEBOOK_MASK_VERSIONS=$1" | tee -a $OUT/maskver.txt
  TILEBOOK_MASK_VERSIONS=$1 timeout ${AB_S:-75} $BIN run --device cuda .carry/maskver57.py > /tmp/mv.txt 2>&1
  echo "rc=$?" >> /tmp/mv.txt
  cat /tmp/mv.txt >> $OUT/maskver.txt
  grep -v "^\[" /tmp/mv.txt | grep -v "^check N" | cut -c1-150
  grep "MISMATCH" /tmp/mv.txt
}
if [ -n "${MODES:-}" ]; then
  for m in $MODES; do run_mode $m; done
  exit 0
fi
run_mode 0
run_mode 1
echo "== triton" | tee -a $OUT/maskver.txt
timeout 90 python3 .carry/maskver57.py 2>&1 | tee -a $OUT/maskver.txt | grep -v "^check N" | tail -5
run_mode 2
run_mode 0
run_mode 1
run_mode 2
