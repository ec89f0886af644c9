set -u
NCU=/usr/local/cuda/bin/ncu
M="gpu__time_duration.sum,sm__cycles_elapsed.avg,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,launch__registers_per_thread,launch__block_size,launch__grid_size,launch__shared_mem_per_block_dynamic"
M="$M,regex:^smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio$,regex:^l1tex__data_bank_conflicts_pipe_lsu_mem_shared.*\.sum$,regex:^smsp__inst_executed_op_(ldgsts|ldsm|shared_ld|shared_st|global_ld|ldc).*\.sum$"
timeout 200 $NCU --kernel-name regex:attn_fwd --launch-skip 1 --launch-count 3 --metrics "$M" $BIN run --device cuda .carry/attnprobe.py > $OUT/ncu_attn_ours.txt 2>&1
echo "ours rc=$?"
timeout 200 $NCU --kernel-name regex:"attn_fwd|flash|fmha|cudnn|sm90" --launch-skip 1 --launch-count 7 --metrics "$M" python3 .carry/attnprobe.py --torch > $OUT/ncu_attn_peers.txt 2>&1
echo "peers rc=$?"
grep -E "^  [a-zA-Z_].*\(|gpu__time|tensor_cycles|dispatch|registers_per|grid_size|block_size" $OUT/ncu_attn_ours.txt $OUT/ncu_attn_peers.txt | cut -c1-200
