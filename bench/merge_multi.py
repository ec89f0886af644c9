"""Pair tilebook's multi-GPU rows (multi_gpu_bench.py's ROW lines) with
peers_multi_gpu.json into multi_gpu.json.

Usage: python3 bench/merge_multi.py PEERS.json TILEBOOK.txt OUT.json
"""
import json
import statistics
import sys


def main(peers_path, ours_path, out_path):
    peers = json.load(open(peers_path))
    rows = {}
    for line in open(ours_path):
        if line.startswith("ROW "):
            _, work, size, unit, value = line.split()
            rows.setdefault((work, int(size)), []).append(float(value))
    med = lambda k: statistics.median(rows[k]) if k in rows else None
    out = {"gpu": peers.get("gpu"), "torch": peers.get("torch"), "nccl_torch": peers.get("nccl"),
           "p2p": peers.get("p2p"), "rows": {f"{w} {s}": v for (w, s), v in sorted(rows.items())}}
    for s in (512, 4096):
        for kind in ("cold", "warm"):
            one, two = med((f"autotune16_{kind}_1gpu", s)), med((f"autotune16_{kind}_2gpu", s))
            if one and two:
                out[f"autotune16_{kind}_{s}_ratio_2gpu_vs_1"] = two / one
    # The headline: tuning the 16 configs at 4096^3 (compiled once; tuning only).
    out["autotune16_ratio_2gpu_vs_1"] = out.get("autotune16_warm_4096_ratio_2gpu_vs_1")
    # Benchmark.run with its points spread over two GPUs (wall time).
    for name in ("vadd", "matmul"):
        one, two = med((f"bench_run_{name}_1gpu", 0)), med((f"bench_run_{name}_2gpu", 0))
        one1, two1 = med((f"bench_run_{name}_1gpu", 1)), med((f"bench_run_{name}_2gpu", 1))
        if one and two and one1 and two1:
            out[f"bench_run_{name}_ratio_2gpu_vs_1"] = (two + two1) / (one + one1)
    torch_bw = peers["allreduce_busbw_GBps"]
    for nbytes in (1 << 20, 16 << 20, 64 << 20, 256 << 20, 1 << 30):
        ours = med(("nccl_allreduce_busbw", nbytes))
        tile = med(("tile_allreduce_busbw", nbytes))
        theirs = torch_bw.get(str(nbytes))
        if ours and theirs:
            out[f"allreduce_{nbytes >> 20}MB_vs_torch"] = ours / theirs
        if tile and theirs:
            out[f"tile_allreduce_{nbytes >> 20}MB_vs_torch"] = tile / theirs
    out["allreduce_256MB_vs_torch"] = out.get("allreduce_256MB_vs_torch")
    json.dump(out, open(out_path, "w"), indent=1, sort_keys=True)
    for k, v in sorted(out.items()):
        if k != "rows":
            print(k, v)


if __name__ == "__main__":
    main(*sys.argv[1:])
