# Variants of our tutorial-matmul PTX (128x256x64, 8 warps, 3 stages) for the session-46 probe.
import re, sys
src = open(sys.argv[1]).read()
def shl(p):
    # sext(x) * 2 as Triton writes it: cvt.s64.s32 then shl.b64
    return re.sub(r"mul\.wide\.s32 \t(%rd\d+), (%r\d+), 2;", r"cvt.s64.s32 \t\1, \2;\n\tshl.b64 \t\1, \1, 1;", p)
def req(p):
    return p.replace(".maxntid 256, 1, 1\n.maxnreg 255\n", ".reqntid 256\n")
def nomax(p):
    return p.replace(".maxnreg 255\n", "")
out = {"ours": src, "ours_shl": shl(src), "ours_req": req(src), "ours_nomax": nomax(src), "ours_shl_req": req(shl(src))}
for n, p in out.items():
    assert n == "ours" or p != src, n
    open(f"s46/{n}.ptx", "w").write(p)
