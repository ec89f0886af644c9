# Move the K loop's copy-address/predicate block (between the loop's exit
# test and the cp.async wait) to the end of the previous iteration (and
# before the loop for the first one), so the values are loop-carried.
import sys, re
src = open(sys.argv[1]).read().split("\n")
top = src.index("$L__BB0_1:")
exit_i = next(i for i in range(top, len(src)) if "bra" in src[i])

wait = next(i for i in range(exit_i, len(src)) if "cp.async.wait_group" in src[i])
end = wait - 1  # the '// begin inline asm' line
assert "begin inline asm" in src[end]
block = src[exit_i + 1:end]
back = next(i for i in range(wait, len(src)) if re.search(r"bra\.uni\s+\$L__BB0_1;", src[i]))
# the header's own lines before the exit test, recomputed with the copies
pre = src[top + 1:exit_i]
out = src[:top] + pre + block + src[top:exit_i + 1] + src[end:back] + pre + block + src[back:]
open(sys.argv[2], "w").write("\n".join(out))
print("moved", len(block), "lines")
