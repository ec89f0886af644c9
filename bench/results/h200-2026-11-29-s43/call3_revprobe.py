# Causal attention forward, programs in launch order vs reversed (longest rows first), alternating.
import sys, importlib.util
import torch, triton
sys.path.insert(0, "bench")
def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); return m
orig = load("attn_orig", ".carry/ln_attn_kernels_orig.py")
rev = load("attn_rev", ".carry/ln_attn_kernels_rev.py")
side = "tilebook" if sys.implementation.name == "rustpython" else "triton"
for D, N, cfg in [(128, 16384, (128, 128, 8, 2)), (128, 16384, (128, 64, 8, 3)), (128, 4096, (128, 128, 8, 2)),
                  (64, 16384, (128, 64, 4, 3)), (64, 16384, (128, 64, 8, 3)), (64, 1024, (128, 64, 4, 3))]:
    q = torch.randn((4, 32, N, D), device="cuda", dtype=torch.float16)
    k = torch.randn_like(q); v = torch.randn_like(q)
    fl = 4 * 4 * 32 * N * N * D * 0.5
    res = {"orig": [], "rev": []}
    for rnd in range(3):
        for name, m in (("orig", orig), ("rev", rev)):
            ms = triton.testing.do_bench(lambda: m.attention_fwd(q, k, v, True, 0.5, cfg))
            res[name].append(fl / ms / 1e9)
    print(side, f"D={D} N={N} {cfg}", " ".join(f"{n}: " + " ".join(f"{x:.1f}" for x in r) for n, r in res.items()), flush=True)
