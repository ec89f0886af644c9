#!/usr/bin/env bash
# The surface programs (ours, using the API surface of Triton's tutorials
# 01–05 and 07–09; tests/surface/) on the GPU,
# each in one `tilebook run --device cuda`. Outputs, tables and plots go to
# $OUT (or bench/results/seeds). SWEEP_CUT=1 thins the softmax, matmul and
# layer-norm sweeps: their torch references of 'cuda' tensors partly run on
# the host, which makes the full sweeps take most of an hour.
# Usage: tests/gpu/seeds.sh [path/to/tilebook]
set -u
BIN=${1:-./target/release/tilebook}
DIR=${OUT:-bench/results/seeds}
mkdir -p "$DIR"
pass=0
fail=0
for f in tests/surface/*.py; do
    name=$(basename "$f" .py)
    src=$f
    if [ "${SWEEP_CUT:-0}" = 1 ]; then
        src=$(mktemp --suffix=.py)
        case $name in
            softmax) sed 's/range(2, 100)/range(2, 100, 8)/' "$f" > "$src" ;;
            layer_norm) sed 's/range(2, 32)/range(2, 32, 10)/' "$f" > "$src" ;;
            matmul) sed 's/range(2, 33)/range(2, 33, 6)/' "$f" > "$src" ;;
            *) cp "$f" "$src" ;;
        esac
    fi
    start=$(date +%s)
    if "$BIN" run --device cuda "$src" > "$DIR/$name.txt" 2>&1; then
        pass=$((pass + 1))
        echo "ok      $name ($(( $(date +%s) - start )) s)"
    else
        fail=$((fail + 1))
        echo "FAILED  $name"
        tail -15 "$DIR/$name.txt" | sed 's/^/        /'
    fi
done
cp /tmp/tilebook-plots/*.svg "$DIR/" 2>/dev/null
echo "seed programs: passed $pass, failed $fail"
[ "$fail" -eq 0 ]
