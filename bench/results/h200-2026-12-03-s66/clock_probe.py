# Sustained fp16 matmul at 8192^3 (the table's config for ours and Triton:
# 128x256x64, 8 warps, 3 stages, GROUP_SIZE_M 8), measured in half-second
# do_bench windows for CP_S seconds, while gpu66.sh samples the SM clock and
# power with nvidia-smi. CP_MODE: kernel (tests/ir/matmul.py prepended; run
# by tilebook or by python3 for Triton) or cublas (torch.matmul, python3).
import os, time, torch, triton

s = int(os.environ.get('CP_N', '8192'))
mode = os.environ.get('CP_MODE', 'kernel')
who = os.environ.get('CP_WHO', mode)
secs = float(os.environ.get('CP_S', '10'))
a = torch.randn(s, s, device='cuda', dtype=torch.float16)
b = torch.randn(s, s, device='cuda', dtype=torch.float16)
c = torch.empty((s, s), device='cuda', dtype=torch.float16)
grid = (triton.cdiv(s, 128) * triton.cdiv(s, 256),)

def step():
    if mode == 'cublas':
        torch.matmul(a, b, out=c)
    else:
        matmul_kernel[grid](a, b, c, s, s, s, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                            c.stride(0), c.stride(1), BLOCK_SIZE_M=128, BLOCK_SIZE_N=256,
                            BLOCK_SIZE_K=64, GROUP_SIZE_M=8, ACTIVATION='', num_warps=8, num_stages=3)

step()
torch.cuda.synchronize()
t0 = time.time()
rows = []
while time.time() - t0 < secs:
    ms = triton.testing.do_bench(step, warmup=5, rep=500)
    rows.append(2 * s ** 3 / ms * 1e-9)
    print(f"{who} t={time.time():.2f} {rows[-1]:.1f} TFLOPS", flush=True)
print(f"{who} summary: first {rows[0]:.1f} last {rows[-1]:.1f} mean {sum(rows) / len(rows):.1f} min {min(rows):.1f} max {max(rows):.1f} TFLOPS over {len(rows)} windows")
