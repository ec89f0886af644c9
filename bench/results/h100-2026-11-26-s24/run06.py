# Calls the published tutorial 06's own test_op over its own pytest grid
# (pytest is not run: the parametrize lists are repeated here), one line per
# case. Runs under tilebook and python3 alike.
import sys, time, itertools, os
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "published"))
import pytest
import torch
import t06
only_small = os.environ.get("SMALL") == "1"
t_all = time.perf_counter()
counts = {}
for Z, H, N, D, causal, mode, provider in itertools.product([1, 4], [2, 48], [128, 1024, 4096], [64, 128], [False, True],
                                                            ["fwd", "bwd"], ["triton-fp16", "triton-fp8"]):
    if only_small and (Z, H) != (1, 2):
        continue
    t0 = time.perf_counter()
    try:
        t06.test_op(Z, H, N, D, causal, False, mode, provider)
        status = "PASS"
    except BaseException as e:
        name = type(e).__name__
        if name in ("Skipped", "SkipException", "OutcomeException") or "skip" in name.lower():
            status = "SKIP"
        else:
            status = f"FAIL {name}: {str(e).splitlines()[0][:200] if str(e) else ''}"
    counts[status.split()[0]] = counts.get(status.split()[0], 0) + 1
    if status != "SKIP":
        print(f"({Z}, {H}, {N}, {D}, causal={causal}, {mode}, {provider}): {status} {time.perf_counter() - t0:.2f} s", flush=True)
print("counts", counts, f"total {time.perf_counter() - t_all:.1f} s")
