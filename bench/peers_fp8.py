# Triton's side of the fp8 matmul row: the tutorial kernel of tests/ir/matmul.py
# (imported as a module, so Triton can read its source) on e5m2 inputs with b
# pre-transposed, as tutorial 03 does, over the tile configs bench/gpu_bench.py
# gives tilebook. Writes peers_fp8.json into $OUT (or the current folder).
import json
import os
import sys

import torch
import triton

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "ir"))
from matmul import matmul_kernel  # noqa: E402

fp8_configs = [(128, 128, 64, 8), (128, 128, 32, 4), (128, 256, 64, 8), (64, 128, 64, 4), (128, 128, 128, 8), (128, 256, 128, 8)]
out = {"matmul_fp8": []}
for s in [4096]:
    a = torch.randn(s, s, device="cuda", dtype=torch.float16).to(torch.float8_e5m2)
    b = torch.randn(s, s, device="cuda", dtype=torch.float16).T.to(torch.float8_e5m2)
    c = torch.empty((s, s), device="cuda", dtype=torch.float16)
    best = None
    for bm, bn, bk, nw in fp8_configs:
        grid = (triton.cdiv(s, bm) * triton.cdiv(s, bn),)

        def f():
            matmul_kernel[grid](a, b, c, s, s, s, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                c.stride(0), c.stride(1), BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk,
                                GROUP_SIZE_M=8, ACTIVATION="", num_warps=nw, num_stages=3)

        ms = triton.testing.do_bench(f, warmup=5, rep=20, return_mode="median")
        tf = 2 * s ** 3 / ms / 1e9
        print(f"triton fp8 {s}: config {bm}x{bn}x{bk} warps={nw}: {tf:.1f} TFLOPS")
        best = tf if best is None else max(best, tf)
    out["matmul_fp8"].append({"n": s, "triton_TFLOPs": best})
od = os.environ.get("OUT", ".")
with open(os.path.join(od, "peers_fp8.json"), "w") as fh:
    json.dump(out, fh, indent=1)
print(json.dumps(out))
