# Session 49: the attention backward's three kernels timed apart, each over its own configs,
# at N = 4096 and 16384 (where the backward falls behind torch), both sides. Prepend
# bench/ln_attn_kernels.py. Prints ms per kernel and config (do_bench median).
import math
B, H = 4, 32
KV = [(64, 64, 4, 2), (64, 64, 4, 3), (32, 64, 4, 3), (64, 128, 8, 2), (32, 128, 4, 3), (64, 64, 8, 2)]
QC = [(64, 64, 4, 2), (64, 64, 4, 3), (128, 64, 8, 2), (128, 64, 4, 2), (128, 32, 4, 3), (64, 32, 4, 3),
      (128, 64, 8, 3), (64, 128, 4, 2)]
def ms(f):
    return triton.testing.do_bench(f, warmup=25, rep=100, return_mode="median")
for D in (64, 128):
    for causal in (False, True):
        for N in (4096, 16384):
            q, k, v, do = (torch.randn((B, H, N, D), device="cuda", dtype=torch.float16) for _ in range(4))
            sm = 1 / math.sqrt(D)
            o, lse = attention_fwd(q, k, v, causal, sm, (128, 64, 8, 3) if D == 128 else (128, 64, 4, 3))
            delta = torch.empty_like(lse)
            dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
            tag = f"D={D} causal={int(causal)} N={N}"
            t = ms(lambda: attn_bwd_delta[(B * H * N // 64,)](o, do, delta, D=D, BLOCK_M=64))
            print(f"{tag} delta: {t:.3f} ms", flush=True)
            for bm, bn, nw, ns in KV:
                try:
                    t = ms(lambda: attn_bwd_kv[(N // bn, B * H)](q, k, v, do, dk, dv, lse, delta, sm, N, D=D, BLOCK_M=bm,
                                                              BLOCK_N=bn, CAUSAL=causal, num_warps=nw, num_stages=ns))
                    print(f"{tag} kv {(bm, bn, nw, ns)}: {t:.3f} ms", flush=True)
                except Exception as e:
                    print(f"{tag} kv {(bm, bn, nw, ns)}: failed {str(e)[:80]}", flush=True)
            for bm, bn, nw, ns in QC:
                try:
                    t = ms(lambda: attn_bwd_q[(N // bm, B * H)](q, k, v, do, dq, lse, delta, sm, N, D=D, BLOCK_M=bm,
                                                             BLOCK_N=bn, CAUSAL=causal, num_warps=nw, num_stages=ns))
                    print(f"{tag} q {(bm, bn, nw, ns)}: {t:.3f} ms", flush=True)
                except Exception as e:
                    print(f"{tag} q {(bm, bn, nw, ns)}: failed {str(e)[:80]}", flush=True)
            del q, k, v, do, o, lse, delta, dq, dk, dv
