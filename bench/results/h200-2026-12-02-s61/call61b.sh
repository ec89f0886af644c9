set -u
BIN=/tmp/tilebook
if [ ! -s $BIN ]; then xz -dc .carry/tilebook.xz > $BIN.part && mv $BIN.part $BIN && chmod +x $BIN; fi
$BIN --version || exit 3
mkdir -p $OUT
t=$(mktemp -d)
cat tests/ir/matmul.py tests/ir/softmax.py tests/gpu/pointer_tma.py > $t/p.py
echo "== pointer_tma"; TILEBOOK_CHECK_GPU=1 timeout 200 $BIN run --device cuda $t/p.py 2>&1 | grep -v "^\[" | tail -20
PART=tables ROWS=base TABLE_S=250 bash .carry/gpu.sh | grep -E "matmul|vadd|softmax|launch|autotune"
grep -E "^(4096|8192): config 128x256x64" $OUT/tilebook.txt
