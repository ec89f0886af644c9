# The reference half of an attention test (torch ops on GPU tensors, the way
# Triton's tutorial 06 test_op computes its reference), each step timed.
# Runs under tilebook and under python3 + torch alike:
#   tilebook run bench/ref_probe.py --device cuda;  python3 bench/ref_probe.py
import sys, time
import torch

DEVICE = "cuda"
def step(name, f):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    r = f()
    torch.cuda.synchronize()
    print(f"STEP {name:28s} {time.perf_counter() - t0:8.4f} s", flush=True)
    return r

import os
# REF_SHAPES=small: the two shapes session 23 measured.
SHAPES = [(1, 2, 1024, 64, True), (2, 8, 1024, 128, True), (4, 48, 1024, 128, True), (4, 48, 4096, 128, True), (4, 48, 4096, 64, False)]
if os.environ.get("REF_SHAPES") == "small":
    SHAPES = SHAPES[:2]
for (Z, H, N, D, causal) in SHAPES:
    print(f"== Z={Z} H={H} N={N} D={D} causal={causal}")
    torch.manual_seed(20)
    q = step("make q", lambda: torch.empty((Z, H, N, D), dtype=torch.float16, device=DEVICE).normal_(mean=0.0, std=0.5).requires_grad_())
    k = torch.empty((Z, H, N, D), dtype=torch.float16, device=DEVICE).normal_(mean=0.0, std=0.5).requires_grad_()
    v = torch.empty((Z, H, N, D), dtype=torch.float16, device=DEVICE).normal_(mean=0.0, std=0.5).requires_grad_()
    dout = step("randn_like", lambda: torch.randn_like(q))
    sm_scale = 0.5
    M = step("tril ones", lambda: torch.tril(torch.ones((N, N), device=DEVICE)))
    p = step("matmul q k^T * scale", lambda: torch.matmul(q, k.transpose(2, 3)) * sm_scale)
    if causal:
        def mask():
            p[:, :, M == 0] = float("-inf")
        step("mask assign", mask)
    pf = step("p.float()", lambda: p.float())
    sm = step("softmax fp32", lambda: torch.softmax(pf, dim=-1))
    ph = step(".half()", lambda: sm.half())
    out = step("matmul p v", lambda: torch.matmul(ph, v))
    step("backward", lambda: out.backward(dout))
    dv = step("grad clone", lambda: v.grad.clone())
    step("allclose", lambda: torch.allclose(out, out, atol=1e-2, rtol=0))
    step("assert_close", lambda: torch.testing.assert_close(v.grad, dv, atol=1e-2, rtol=0))
    del q, k, v, dout, M, p, pf, sm, ph, out, dv
