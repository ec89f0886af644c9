# fp8 matmul (128x128x128, 8 warps, 3 stages) PTX variants: as compiled, with the runtime's
# two-block build (.minnctapersm 2, .maxnreg 128), and with the loop's copies moved after the
# wgmma issue (wait_group 1, then a barrier: every warpgroup is done with tile i-1 before its
# buffer is refilled), Triton's order, which keeps a group in flight on three buffers.
import sys
src = open(sys.argv[1]).read()
def two(p):
    return p.replace(".maxntid 256, 1, 1\n.maxnreg 255\n", ".maxntid 256, 1, 1\n.minnctapersm 2\n.maxnreg 128\n")
def t1(p):
    lines = p.split("\n")
    head = lines.index("$L__BB0_1:")
    end = next(i for i in range(head, len(lines)) if lines[i].strip() == "bra.uni \t$L__BB0_1;")
    body = lines[head:end]
    first = next(i for i, l in enumerate(body) if "cp.async.cg.shared.global" in l)
    commits = [i for i, l in enumerate(body) if "cp.async.commit_group" in l]
    last = commits[-1] + 2  # the `// end inline asm` after it
    first -= 1  # its `// begin inline asm`
    copies = body[first:last]
    rest = body[:first] + body[last:]
    w = next(i for i, l in enumerate(rest) if l.strip() == "wgmma.wait_group.sync.aligned 0;")
    rest[w] = "wgmma.wait_group.sync.aligned 1;"
    rest = rest[:w + 2] + ["\tbar.sync \t0;"] + copies + rest[w + 2:]
    out = lines[:head] + rest + lines[end:]
    x = out.index("$L__BB0_3:")
    out.insert(x + 1, "\twgmma.wait_group.sync.aligned 0;")
    return "\n".join(out)
for n, p in {"fp8_ours": src, "fp8_two": two(src), "fp8_t1": t1(src), "fp8_t1_two": two(t1(src))}.items():
    assert n == "fp8_ours" or p != src
    open(f"s46fp8/{n}.ptx", "w").write(p)
