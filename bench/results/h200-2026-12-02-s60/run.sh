#!/usr/bin/env bash
# Each probe under real torch (python3) and under tilebook on the GPU; the diff.
BIN=/tmp/tilebook
if [ ! -s $BIN ]; then xz -dc .carry/tilebook.xz > $BIN.part && mv $BIN.part $BIN && chmod +x $BIN; fi
$BIN --version
mkdir -p $OUT
for f in .carry/probe/p*.py; do
  b=$(basename $f .py)
  timeout 120 python3 $f > $OUT/$b.torch.txt 2>&1
  timeout 120 $BIN run --device cuda $f 2>&1 | grep -v "^tilebook: \|^\[.*\] grid" > $OUT/$b.tb.txt
  echo "== $b"; diff $OUT/$b.torch.txt $OUT/$b.tb.txt && echo SAME
done
