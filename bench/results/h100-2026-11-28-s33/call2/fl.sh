set -x
D=$OUT/fl; mkdir -p $D
export PATH=/usr/local/cuda/bin:$PATH
for i in 1 2; do
CUDA_CACHE_DISABLE=1 TRITON_CACHE_DIR=/tmp/tc$i python3 .carry/fl/triton_first.py > $D/triton$i.txt 2>&1
done
TP=$(find /tmp/tc1 -name '*.ptx' | head -1); cp $TP $D/triton.ptx
TRITON_CACHE_DIR=/tmp/tln python3 .carry/fl/triton_ln.py > $D/triton_ln.txt 2>&1
(cd /tmp/tln && tar czf $D/tln.tgz .)
python3 .carry/fl/ptxas_time.py .carry/fl/ours.ptx .carry/fl/ours_o0.ptx $D/triton.ptx .carry/fl/ln16k.ptx .carry/fl/ln16k_2.ptx .carry/fl/ln4k.ptx $(find /tmp/tln -name 'ln_fwd.ptx') > $D/ptxas.txt 2>&1
cat $D/*.txt
