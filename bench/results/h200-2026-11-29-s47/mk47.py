# Session 47: our loops without the per-iteration `fence.proxy.async.shared::cta`
# (Triton's PTX has none between cp.async and wgmma); fp8 also with Triton's order.
import sys
sys.path.insert(0, ".")
spec = {}
exec(open("s46fp8/mk.py").read().replace("src = open(sys.argv[1]).read()", "").split("for n, p in")[0], spec)
two, t1 = spec["two"], spec["t1"]
F = "\tfence.proxy.async.shared::cta;\n"
def nofence(p):
    q = p.replace(F, "")
    assert q != p
    return q
fp8 = open("s46fp8/fp8_ours.ptx").read()
mm = open("s46b/ours_new.ptx").read()
out = {"s47fp8/fp8_two": two(fp8), "s47fp8/fp8_two_nofence": nofence(two(fp8)),
       "s47fp8/fp8_t1_two_nofence": nofence(two(t1(fp8))), "s47/mm": mm, "s47/mm_nofence": nofence(mm)}
for n, p in out.items():
    open(f"{n}.ptx", "w").write(p)
    print(n, p.count("fence.proxy"))
