# Triton's PTX for the tutorial matmul at 128x256x64 / 8 warps / 3 stages,
# then both PTX files through ptxas and cuobjdump, and an opcode histogram
# of each (whole kernel) side by side.
import os, re, subprocess, sys, collections
import torch, triton
sys.path.insert(0, "tests/ir")
from matmul import matmul_kernel
s = 4096
a = torch.randn(s, s, device='cuda', dtype=torch.float16)
c = torch.empty((s, s), device='cuda', dtype=torch.float16)
k = matmul_kernel.warmup(a, a, c, s, s, s, a.stride(0), a.stride(1), a.stride(0), a.stride(1), c.stride(0), c.stride(1),
                         BLOCK_SIZE_M=128, BLOCK_SIZE_N=256, BLOCK_SIZE_K=64, GROUP_SIZE_M=8, ACTIVATION="",
                         num_warps=8, num_stages=3, grid=(1,))
out = os.environ["OUT"]
open("/tmp/triton_mm.ptx", "w").write(k.asm["ptx"])
B = os.path.join(os.path.dirname(triton.__file__), "backends/nvidia/bin")
hist = {}
for name, ptx in [("ours", ".carry/ours_mm.ptx"), ("triton", "/tmp/triton_mm.ptx")]:
    r = subprocess.run([f"{B}/ptxas", "-arch=sm_90a", "-v", ptx, "-o", f"/tmp/{name}.cubin"], capture_output=True, text=True)
    print(name, r.stderr.strip().splitlines()[-1] if r.stderr else r.stdout)
    sass = subprocess.run([f"{B}/cuobjdump", "-sass", f"/tmp/{name}.cubin"], capture_output=True, text=True).stdout
    open(f"{out}/{name}_mm.sass", "w").write(sass)
    ops = re.findall(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)", sass)
    hist[name] = collections.Counter(op.split(".")[0] for op in ops)
    print(name, "instructions", sum(hist[name].values()))
keys = sorted(set(hist["ours"]) | set(hist["triton"]), key=lambda o: -(hist["ours"][o] + hist["triton"][o]))
for o in keys:
    print(f"{o:12s} ours {hist['ours'][o]:5d}  triton {hist['triton'][o]:5d}")
