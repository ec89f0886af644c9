set -u
NCU=/usr/local/cuda/bin/ncu
M="gpu__time_duration.sum,sm__cycles_elapsed.avg,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,launch__registers_per_thread,launch__block_size,launch__grid_size,launch__shared_mem_per_block_dynamic,sm__warps_active.avg.pct_of_peak_sustained_active,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem"
M="$M,regex:^smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio$,regex:^l1tex__data_bank_conflicts_pipe_lsu_mem_shared.*\.sum$,regex:^smsp__inst_executed_op_(ldgsts|ldsm|shared_ld|shared_st|global_ld|ldc).*\.sum$"
K='regex:attn_bwd'
timeout 200 $NCU --kernel-name $K --launch-skip 3 --launch-count 3 --metrics "$M" $BIN run --device cuda .carry/attnbwdprobe.py > $OUT/ncu_attnbwd_ours.txt 2>&1
echo "ours rc=$?"
timeout 200 $NCU --kernel-name $K --launch-skip 3 --launch-count 3 --metrics "$M" python3 .carry/attnbwdprobe.py > $OUT/ncu_attnbwd_triton.txt 2>&1
echo "triton rc=$?"
grep -E "^  [a-zA-Z_].*\(|gpu__time|tensor_cycles|stalled_(dispatch|barrier|long|wait|mio|math|short|lg)|registers_per|inst_executed.sum|warps_active|shared_mem_per|occupancy_limit" $OUT/ncu_attnbwd_ours.txt $OUT/ncu_attnbwd_triton.txt | sed 's/  */ /g' | cut -c1-160
timeout 200 $NCU --kernel-name regex:attn_bwd_kv --launch-skip 1 --launch-count 1 --section SourceCounters --page source --print-source sass --csv $BIN run --device cuda .carry/attnbwdprobe.py > $OUT/src_ours.csv 2>&1
timeout 200 $NCU --kernel-name regex:attn_bwd_kv --launch-skip 1 --launch-count 1 --section SourceCounters --page source --print-source sass --csv python3 .carry/attnbwdprobe.py > $OUT/src_triton.csv 2>&1
for s in ours triton; do python3 .carry/ncuparse.py $OUT/src_$s.csv 0.008 $s > $OUT/src_${s}_summary.txt 2>&1; head -40 $OUT/src_${s}_summary.txt; done
xz -T4 $OUT/src_ours.csv $OUT/src_triton.csv
