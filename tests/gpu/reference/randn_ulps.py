# tilebook's tl.randn against Triton's on this GPU over 2^20 offsets: run with
# python3 for Triton's numbers and with `tilebook run --device cuda` (or
# `--device cpu`) for ours; each writes its bits to the file named by
# $RANDN_OUT, and the files must be identical (`cmp`).
import os
import torch
import triton
import triton.language as tl


@triton.jit
def normals(out, seed, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out + i, tl.randn(seed, i).to(tl.int32, bitcast=True), mask=i < n)


n = 1 << 20
out = torch.zeros(n, dtype=torch.int32, device="cuda")
normals[(triton.cdiv(n, 1024),)](out, 1234, n, BLOCK=1024)
with open(os.environ["RANDN_OUT"], "w") as f:
    f.write("\n".join(str(v) for v in out.cpu().tolist()))
