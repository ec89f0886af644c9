set -u
NCU=/usr/local/cuda/bin/ncu
rm -f .carry/s45/isrc_split.ptx .carry/s45/split.ptx
M="regex:^sm__pipe_.*(tensor|shared|gmma).*_cycles_active\.avg\.pct_of_peak_sustained_active$"
M="$M,regex:^l1tex__data_bank_(conflicts|reads|writes)_pipe_lsu_mem_shared.*\.sum$"
M="$M,regex:^l1tex__data_pipe_lsu_wavefronts_mem_shared.*\.sum$"
M="$M,regex:^smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio$"
M="$M,regex:^lts__t_sector.*hit_rate\.pct$,regex:^dram__bytes_read\.sum$,regex:^smsp__inst_executed\.sum$"
M="$M,regex:^smsp__inst_executed_op_.*\.sum$,regex:^sm__cycles_elapsed\.avg$"
M="$M,regex:^l1tex__t_(sectors|requests)_pipe_lsu_mem_global_op_ldgsts.*\.sum$"
timeout 400 $NCU --kernel-name matmul_kernel --launch-count 2 --metrics "$M" python3 .carry/harness45.py 1 > $OUT/ncu2.txt 2>&1
echo "ncu rc=$?"; grep -c "" $OUT/ncu2.txt; grep -i "error" $OUT/ncu2.txt | head
set -u
NCU=/usr/local/cuda/bin/ncu
rm -f .carry/s45/isrc_split.ptx .carry/s45/split.ptx
$NCU --version | tail -1
timeout 300 $NCU --kernel-name matmul_kernel --launch-count 2 --section SourceCounters --section WarpStateStats --page source --print-source sass --csv python3 .carry/harness45.py 1 > $OUT/ncu3.csv 2>&1
echo "ncu rc=$?"; wc -l $OUT/ncu3.csv; head -c 600 $OUT/ncu3.csv; grep -i "error\|warn" $OUT/ncu3.csv | head -5
xz -T4 -6 $OUT/ncu3.csv; ls -la $OUT
set -u
NCU=/usr/local/cuda/bin/ncu
$NCU --version | tail -1
timeout 300 $NCU --kernel-name matmul_kernel --launch-count 5 --section SourceCounters --section WarpStateStats --page source --print-source sass --csv python3 .carry/harness45.py 1 > $OUT/ncu4.csv 2>&1
echo "ncu rc=$?"; wc -l $OUT/ncu4.csv; head -c 600 $OUT/ncu4.csv; grep -i "error\|warn" $OUT/ncu4.csv | head -5
xz -T4 -6 $OUT/ncu4.csv; ls -la $OUT
timeout 200 $NCU --kernel-name matmul_kernel --launch-count 5 --metrics sm__cycles_elapsed.avg,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active,regex:^smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio$,smsp__inst_executed.sum python3 .carry/harness45.py 1 > $OUT/ncu4m.txt 2>&1
grep -E "matmul_kernel|cycles_elapsed|tensor_cycles|dispatch|barrier|long_score|stalled_wait|inst_executed" $OUT/ncu4m.txt
set -u
NCU=/usr/local/cuda/bin/ncu
timeout 120 python3 .carry/harness45.py 8 2>&1 | tee $OUT/harness.txt | grep -v "^\s*$" | tail -12
timeout 200 $NCU --kernel-name matmul_kernel --launch-count 4 --metrics sm__cycles_elapsed.avg,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active,regex:^smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio$,smsp__inst_executed.sum python3 .carry/harness45.py 1 > $OUT/ncu5m.txt 2>&1
grep -E "matmul_kernel|cycles_elapsed|tensor_cycles|dispatch|inst_executed" $OUT/ncu5m.txt | grep -v PROF
set -u
NCU=/usr/local/cuda/bin/ncu
python3 - <<'PY'
import sys, os, torch
sys.path.insert(0, "tests/ir")
from matmul import matmul_kernel
s = 4096
a = torch.randn(s, s, device="cuda", dtype=torch.float16); b = torch.randn(s, s, device="cuda", dtype=torch.float16); c = torch.empty_like(a)
tk = matmul_kernel.warmup(a, b, c, s, s, s, s, 1, s, 1, s, 1, BLOCK_SIZE_M=128, BLOCK_SIZE_N=256, BLOCK_SIZE_K=64, GROUP_SIZE_M=8, ACTIVATION="", num_warps=8, num_stages=3, grid=(512,))
open(os.environ["OUT"] + "/triton_mm.ptx", "w").write(tk.asm["ptx"])
PY
timeout 300 $NCU --kernel-name matmul_kernel --launch-count 3 --section SourceCounters --section WarpStateStats --page source --print-source sass --csv python3 .carry/harness45.py 1 > $OUT/ncu6.csv 2>&1
echo "ncu rc=$?"
timeout 200 $NCU --kernel-name matmul_kernel --launch-count 3 --metrics sm__cycles_elapsed.avg,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active,regex:^smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio$,smsp__inst_executed.sum python3 .carry/harness45.py 1 > $OUT/ncu6m.txt 2>&1
grep -E "matmul_kernel|cycles_elapsed|tensor_cycles|dispatch|inst_executed" $OUT/ncu6m.txt | grep -v PROF
xz -T4 -6 $OUT/ncu6.csv
set -u
NCU=/usr/local/cuda/bin/ncu
B=$(python3 -c "import triton,os;print(os.path.join(os.path.dirname(triton.__file__),'backends/nvidia/bin'))")
timeout 120 python3 .carry/harness45.py 6 2>&1 | grep -v "^\s*$" | tail -6 | tee $OUT/harness.txt
for f in /tmp/ours*.cubin /tmp/triton_ptx.cubin; do $B/cuobjdump -sass $f > $OUT/$(basename $f .cubin).sass; done
timeout 300 $NCU --kernel-name matmul_kernel --launch-count 3 --section SourceCounters --section WarpStateStats --page source --print-source sass --csv python3 .carry/harness45.py 1 > $OUT/ncu7.csv 2>&1
timeout 200 $NCU --kernel-name matmul_kernel --launch-count 3 --metrics sm__cycles_elapsed.avg,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active,regex:^smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio$,smsp__inst_executed.sum python3 .carry/harness45.py 1 > $OUT/ncu7m.txt 2>&1
grep -E "matmul_kernel|cycles_elapsed|tensor_cycles|dispatch|inst_executed" $OUT/ncu7m.txt | grep -v PROF
xz -T4 -6 $OUT/ncu7.csv $OUT/*.sass
