# Make the epilogue's uses of pre-loop integer registers depend on the K
# loop's exit counter (min(counter, 0) == 0, which ptxas cannot prove), so
# ptxas cannot compute the epilogue's addresses before the loop.
import sys, re
src = open(sys.argv[1]).read().split("\n")
top = src.index("$L__BB0_1:")
exit_lbl = src.index("$L__BB0_3:")
ctr = sys.argv[3]  # the loop counter register, e.g. %r625
defined = set()
for l in src[:top]:
    m = re.match(r"\s+[a-z][\w.]*\s+(%r\d+|%rd\d+),", l)
    if m:
        defined.add(m.group(1))
# registers written inside the loop are not pre-loop values
inloop = set()
for l in src[top:exit_lbl]:
    m = re.match(r"\s+[a-z][\w.]*\s+(%r\d+|%rd\d+),", l)
    if m:
        inloop.add(m.group(1))
pre = defined - inloop
used = set()
for l in src[exit_lbl + 1:]:
    for r in re.findall(r"%rd?\d+\b", l):
        if r in pre:
            used.add(r)
# insert after the exit label's first lines (before the first use)
decl = [f"\t.reg .b32 %lz;", f"\t.reg .b64 %lzd;"]
ins = [f"\tmin.s32 \t%lz, {ctr}, 0;", "\tcvt.s64.s32 \t%lzd, %lz;"]
ren = {}
for r in sorted(used):
    n = r.replace("%rd", "%lrd") if r.startswith("%rd") else r.replace("%r", "%lr")
    ren[r] = n
    if r.startswith("%rd"):
        decl.append(f"\t.reg .b64 {n};"); ins.append(f"\tadd.s64 \t{n}, {r}, %lzd;")
    else:
        decl.append(f"\t.reg .b32 {n};"); ins.append(f"\tadd.s32 \t{n}, {r}, %lz;")
out = src[:exit_lbl + 1] + ins
pat = re.compile(r"%rd?\d+\b")
for l in src[exit_lbl + 1:]:
    out.append(pat.sub(lambda m: ren.get(m.group(0), m.group(0)), l))
# declarations at the top of the body
i = next(k for k, l in enumerate(out) if l.strip().startswith(".reg"))
out = out[:i] + decl + out[i:]
open(sys.argv[2], "w").write("\n".join(out))
print("laundered", len(used), "registers")
