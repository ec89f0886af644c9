set -u
BIN=/tmp/tilebook
if [ ! -s $BIN ]; then xz -dc .carry/tilebook.xz > $BIN.part && mv $BIN.part $BIN && chmod +x $BIN; fi
$BIN --version || exit 3
mkdir -p $OUT
t=$(mktemp -d)
cat tests/ir/matmul.py tests/ir/softmax.py tests/gpu/pointer_tma.py > $t/p.py
echo "== pointer_tma"; TILEBOOK_CHECK_GPU=1 timeout 200 $BIN run --device cuda $t/p.py 2>&1 | grep -v "^\[" | tail -30
cat tests/ir/matmul.py .carry/fp861.py > $t/f.py
for r in 1 2; do for m in 1 0; do
  echo "== TMA=$m run $r"; TILEBOOK_POINTER_TMA=$m timeout 100 $BIN run --device cuda $t/f.py 2>&1 | grep -v "^\[" | tee $OUT/fp8_${m}_${r}.txt
done; done
