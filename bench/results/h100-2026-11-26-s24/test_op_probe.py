# An attention test in the shape of tutorial 06's test_op (Triton 3.6's
# parameter grid: Z in {1, 4}, H in {2, 48}, N_CTX in {128, 1024, 4096},
# HEAD_DIM in {64, 128}, causal and not, fp16 backward), on our own kernels
# (bench/ln_attn_kernels.py) wrapped in an autograd.Function; the reference
# is torch operations on GPU tensors with autograd. Each case is timed.
# Runs under tilebook and under python3 + torch + Triton alike.
import sys, time, os
sys.path.insert(0, "bench")
import torch
from ln_attn_kernels import attention_fwd, attention_bwd

DEVICE = "cuda"


class Attn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, causal, sm_scale):
        cfg = (64, 64, 4, 3)
        o, lse = attention_fwd(q, k, v, causal, sm_scale, cfg)
        ctx.save_for_backward(q, k, v, o, lse)
        ctx.causal, ctx.sm_scale = causal, sm_scale
        return o

    @staticmethod
    def backward(ctx, do):
        q, k, v, o, lse = ctx.saved_tensors
        dq, dk, dv = attention_bwd(do.contiguous(), q, k, v, o, lse, ctx.causal, ctx.sm_scale, (64, 64, 4, 3))
        return dq, dk, dv, None, None


def case(Z, H, N, D, causal):
    torch.manual_seed(20)
    mk = lambda: torch.empty((Z, H, N, D), dtype=torch.float16, device=DEVICE).normal_(mean=0.0, std=0.5).requires_grad_()
    q, k, v = mk(), mk(), mk()
    sm_scale = 0.5
    M = torch.tril(torch.ones((N, N), device=DEVICE))
    p = torch.matmul(q, k.transpose(2, 3)) * sm_scale
    if causal:
        p[:, :, M == 0] = float("-inf")
    p = torch.softmax(p.float(), dim=-1).to(torch.float16)
    ref = torch.matmul(p, v).half()
    dout = torch.randn_like(q)
    ref.backward(dout)
    refs = []
    for t in (v, k, q):
        refs.append(t.grad.clone())
        t.grad = None
    out = Attn.apply(q, k, v, causal, sm_scale).half()
    out.backward(dout)
    torch.testing.assert_close(out, ref, atol=1e-2, rtol=0)
    for t, want in zip((v, k, q), refs):
        torch.testing.assert_close(t.grad, want, atol=1e-2, rtol=0)


only = os.environ.get("CASES")
total = time.perf_counter()
for Z in (1, 4):
    for H in (2, 48):
        for N in (128, 1024, 4096):
            for D in (64, 128):
                for causal in (False, True):
                    if only and f"{Z},{H},{N},{D},{int(causal)}" not in only.split(";"):
                        continue
                    t0 = time.perf_counter()
                    try:
                        case(Z, H, N, D, causal)
                        status = "PASS"
                    except Exception as e:
                        status = f"FAIL {type(e).__name__}: {str(e).splitlines()[0][:160]}"
                    torch.cuda.synchronize()
                    print(f"({Z}, {H}, {N}, {D}, causal={causal}): {status} {time.perf_counter() - t0:.2f} s", flush=True)
print(f"total {time.perf_counter() - total:.1f} s")
