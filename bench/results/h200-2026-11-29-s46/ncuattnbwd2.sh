set -u
NCU=/usr/local/cuda/bin/ncu
M="gpu__time_duration.sum,launch__registers_per_thread,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem,launch__shared_mem_per_block_dynamic,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"
timeout 100 $NCU --kernel-name regex:attn_bwd --launch-skip 3 --launch-count 3 --metrics "$M" $BIN run --device cuda .carry/attnbwdprobe.py > $OUT/ncu_attnbwd_final.txt 2>&1
echo "rc=$?"; grep -E "^  [a-zA-Z_].*\(|gpu__time|registers|occupancy|shared_mem|tensor" $OUT/ncu_attnbwd_final.txt | sed 's/  */ /g' | cut -c1-110
