#!/usr/bin/env bash
# Session 66's device call: sustained fp16 8192^3 of ours, cuBLAS and
# Triton, interleaved, with the SM clock and power sampled every 100 ms.
set -u
BIN=/tmp/tilebook
if [ ! -s $BIN ]; then xz -dc .carry/tilebook.xz > $BIN.part && mv $BIN.part $BIN && chmod +x $BIN; fi
$BIN --version || { echo "NO WORKING BINARY"; rm -f $BIN; exit 3; }
mkdir -p $OUT
P=bench/results/h200-2026-12-03-s66/clock_probe.py
t=$(mktemp -d)
cat tests/ir/matmul.py $P > $t/k.py
F=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active
nvidia-smi --query-gpu=$F --format=csv -i 0 > /dev/null 2>&1 || F=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active
nvidia-smi --query-gpu=$F,power.limit --format=csv -i 0 | tee $OUT/limits.txt
nvidia-smi --query-gpu=$F --format=csv,noheader -lms 100 -i 0 > $OUT/smi.csv &
SMI=$!
mark() { echo "$(date +%Y/%m/%d\ %H:%M:%S.%3N) $1" | tee -a $OUT/marks.txt; }
for round in 1 2; do
  mark "ours start"; CP_WHO=ours timeout 60 $BIN run --device cuda $t/k.py 2>&1 | grep -v "^\[" | tee -a $OUT/probe.txt; mark "ours end"; sleep 3
  mark "cublas start"; CP_MODE=cublas timeout 60 python3 $P 2>&1 | tee -a $OUT/probe.txt; mark "cublas end"; sleep 3
  mark "triton start"; CP_WHO=triton timeout 60 python3 $t/k.py 2>&1 | tee -a $OUT/probe.txt; mark "triton end"; sleep 3
done
kill $SMI
grep summary $OUT/probe.txt
wc -l $OUT/smi.csv
