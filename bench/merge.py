"""Pair tilebook's ROW lines with peers.json and write latest.json (ratios ours/peer).

Usage: python3 bench/merge.py peers.json tilebook.txt out.json
Time-like units (s, us) have ratio = ours / peer (lower is better); rates have
ratio = ours / peer (higher is better). The table printed says which.
"""
import json
import sys
import datetime

peers = json.load(open(sys.argv[1]))
# The fp8 matmul peer (bench/peers_fp8.py) writes its own file next to peers.json.
try:
    peers.update(json.load(open(sys.argv[1].replace("peers.json", "peers_fp8.json"))))
except OSError:
    pass


def read_rows(path):
    """`ROW workload size unit value [key=value ...]` lines."""
    rows = []
    for line in open(path):
        if line.startswith("ROW "):
            _, w, size, unit, value, *extra = line.split()
            rows.append((w, int(size), unit, float(value), dict(e.split("=", 1) for e in extra)))
    return rows


ours = read_rows(sys.argv[2])
# Triton running bench/ln_attn_kernels.py (bench/ln_attn_bench.py under python3).
try:
    triton_ln_attn = read_rows(sys.argv[1].replace("peers.json", "peers_ln_attn.txt"))
except OSError:
    triton_ln_attn = []


def triton_same(w, size, extra):
    r = [v for (pw, ps, _, v, pe) in triton_ln_attn if (pw, ps, pe) == (w, size, extra)]
    return r[0] if r else None


def torch_for(w, size, extra):
    """torch's number for a layer-norm or attention row (attention: the best
    of the flash and cuDNN backends)."""
    if w.startswith("layernorm"):
        r = [v for v in peers.get("layernorm_fp16", []) if v["N"] == size]
        # `layernorm_bwd_locks` (tutorial 05's backward) against torch's backward too.
        way = w[len("layernorm_"):].removesuffix("_locks")
        return r[0].get(f"torch_{way}_GBps") if r else None
    if w.startswith("attention"):
        way = w[len("attention_"):]
        r = [v for v in peers.get("attention_fp16", [])
             if v["N"] == size and v["D"] == int(extra["D"]) and int(v["causal"]) == int(extra["causal"])]
        vals = [r[0][k] for k in (f"flash_{way}_TFLOPs", f"cudnn_{way}_TFLOPs") if r and k in r[0]]
        return max(vals) if vals else None
    return None


def peer_for(w, size):
    if w == "vadd":
        r = [v for v in peers["vadd"] if v["n"] == size]
        return ("triton", r[0]["triton_GBps"]) if r else (None, None)
    if w == "softmax":
        r = [v for v in peers["softmax"] if v["N"] == size]
        return ("triton", r[0]["triton_GBps"]) if r else (None, None)
    if w == "matmul_fp16":
        r = [v for v in peers["matmul_fp16"] if v["n"] == size]
        return ("triton", r[0]["triton_TFLOPs"]) if r else (None, None)
    if w == "matmul_fp8":
        r = [v for v in peers.get("matmul_fp8", []) if v["n"] == size]
        return ("triton", r[0]["triton_TFLOPs"]) if r else (None, None)
    if w == "first_launch_matmul":
        return ("triton", peers.get("mm_first_call_s"))
    if w == "autotune16":
        return ("triton", peers.get("mm_autotune_first_call_s"))
    if w == "launch_overhead":
        return ("triton", peers.get("vadd_launch_us_triton"))
    return (None, None)


rows = []
for w, size, unit, value, extra in ours:
    if w.startswith(("layernorm", "attention")):
        # Two peers: torch, then Triton running the same kernels.
        label = " ".join(f"{k}={v}" for k, v in extra.items())
        for peer, pv in (("torch", torch_for(w, size, extra)), ("triton", triton_same(w, size, extra))):
            rows.append(dict(workload=w, size=size, unit=unit, tilebook=value, peer=peer, peer_value=pv,
                             ratio=(value / pv) if pv else None, **{k: int(v) for k, v in extra.items()}))
            ratio = f"{value / pv:.3f}" if pv else None
            print(f"{w:20s} {size:>10d} {label:14s} {value:12.3f} {unit:6s} vs {peer} "
                  f"{pv if pv is None else round(pv, 3)}  ratio {ratio}  (higher is better)")
        continue
    peer, pv = peer_for(w, size)
    rows.append(dict(workload=w, size=size, unit=unit, tilebook=value, peer=peer, peer_value=pv,
                     ratio=(value / pv) if pv else None))
    extra = ""
    if w == "matmul_fp16":
        r = [v for v in peers["matmul_fp16"] if v["n"] == size]
        if r:
            rows.append(dict(workload=w, size=size, unit=unit, tilebook=value, peer="cublas",
                             peer_value=r[0]["cublas_TFLOPs"], ratio=value / r[0]["cublas_TFLOPs"]))
            extra = f"  (cuBLAS {r[0]['cublas_TFLOPs']:.1f})"
    better = "lower is better" if unit in ("s", "us") else "higher is better"
    print(f"{w:20s} {size:>10d} {value:12.3f} {unit:6s} vs {peer} {pv if pv is None else round(pv, 3)}  ratio {rows[-1 if not extra else -2]['ratio'] if pv else None}  ({better}){extra}")

out = dict(device=peers.get("device"), date=datetime.datetime.now().isoformat(timespec="seconds"), rows=rows)
json.dump(out, open(sys.argv[3], "w"), indent=1)
