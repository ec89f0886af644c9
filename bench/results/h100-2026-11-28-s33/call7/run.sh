for p in .carry/px/*.ptx; do echo "== $p"; /usr/local/cuda/bin/ptxas -arch=sm_90a -O3 -v $p -o /tmp/x.cubin 2>&1 | grep -v "injected" | grep -E "Used|spill|Performance|serialized" ; done
