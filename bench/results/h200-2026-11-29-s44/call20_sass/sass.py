# SASS of ours (as compiled, and without the proxy fence) and Triton's PTX for the
# 128x256x64 / 8-warp tutorial matmul, through Triton's bundled ptxas and cuobjdump.
import os, subprocess, sys
import torch, triton
sys.path.insert(0, "tests/ir")
from matmul import matmul_kernel
s = 4096
a = torch.randn(s, s, device="cuda", dtype=torch.float16)
c = torch.empty_like(a)
tk = matmul_kernel.warmup(a, a, c, s, s, s, s, 1, s, 1, s, 1, BLOCK_SIZE_M=128, BLOCK_SIZE_N=256, BLOCK_SIZE_K=64,
                          GROUP_SIZE_M=8, ACTIVATION="", num_warps=8, num_stages=3, grid=(512,))
ours = open(".carry/ours_mm.ptx").read()
B = os.path.join(os.path.dirname(triton.__file__), "backends/nvidia/bin")
out = os.environ["OUT"]
for name, ptx in [("ours", ours), ("ours_nofence", ours.replace("\tfence.proxy.async.shared::cta;\n", "")), ("triton", tk.asm["ptx"])]:
    open(f"/tmp/{name}.ptx", "w").write(ptx)
    subprocess.run([f"{B}/ptxas", "-arch=sm_90a", f"/tmp/{name}.ptx", "-o", f"/tmp/{name}.cubin"], check=True)
    sass = subprocess.run([f"{B}/cuobjdump", "-sass", f"/tmp/{name}.cubin"], capture_output=True, text=True).stdout
    open(f"{out}/{name}.sass", "w").write(sass)
    print(name, "MEMBAR", sass.count("MEMBAR"), "FENCE", sass.count("FENCE"), "HGMMA", sass.count("HGMMA"), "lines", sass.count("/*0"))
