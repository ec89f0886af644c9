set -u
NCU=/usr/local/cuda/bin/ncu
export DT=fp8 BM=128 BN=128 BK=128 SMEM=114688 VDIR=.carry/s46fp8b
PTX_OUT=$OUT/triton_fp8.ptx SASS_OUT=$OUT/sass_fp8.txt timeout 100 python3 .carry/harness46.py 4 2>&1 | tee $OUT/h46fp8b.txt | grep "median\|regis"
M="sm__cycles_elapsed.avg,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active,regex:^smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio$,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem,dram__bytes_read.sum,lts__t_sector_hit_rate.pct"
timeout 200 $NCU --kernel-name matmul_kernel --launch-count 2 --metrics "$M" python3 .carry/harness46.py 1 > $OUT/ncu46m.txt 2>&1
grep -E "matmul_kernel|cycles_elapsed|tensor_cycles|stalled_(dispatch|barrier|long|wait|math|mio|lg|no_inst|selected|short)|inst_executed|warps_active|registers|occupancy|dram__|hit_rate" $OUT/ncu46m.txt | grep -v PROF
timeout 200 $NCU --kernel-name matmul_kernel --launch-count 2 --section SourceCounters --page source --print-source sass --csv python3 .carry/harness46.py 1 > $OUT/ncu46src.csv 2>&1
echo "ncu src rc=$?"; python3 .carry/ncuparse.py $OUT/ncu46src.csv 0.8 > $OUT/ncu46src_summary.txt 2>&1; head -50 $OUT/ncu46src_summary.txt
xz -T4 $OUT/ncu46src.csv $OUT/sass_fp8.txt
