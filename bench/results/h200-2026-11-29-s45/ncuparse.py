# Per-instruction warp-stall samples from `ncu --page source --print-source sass --csv`:
# the totals per stall reason and every instruction above a share of the
# samples. Usage: ncuparse.py file.csv [share] [names,of,kernels]
import csv, sys, io
lines = open(sys.argv[1]).read().split("\n")
starts = [i for i, l in enumerate(lines) if l.startswith('"Kernel Name"')]
names = sys.argv[3].split(",") if len(sys.argv) > 3 else ["k%d" % i for i in range(9)]
for k, s in enumerate(starts):
    e = starts[k + 1] if k + 1 < len(starts) else len(lines)
    rows = list(csv.reader(io.StringIO("\n".join(lines[s + 1:e]))))
    hdr = rows[0]; rows = [r for r in rows[1:] if len(r) == len(hdr)]
    ix = {h: i for i, h in enumerate(hdr)}
    stall_cols = [h for h in hdr if h.startswith("stall_") and "Not Issued" not in h]
    tot = sum(int(r[ix["Warp Stall Sampling (All Samples)"]]) for r in rows)
    print(f"== {names[k]}: {len(rows)} instructions, {tot} samples")
    agg = {h: sum(int(r[ix[h]]) for r in rows) for h in stall_cols}
    print("  totals:", ", ".join(f"{h[6:]} {v / tot:.3f}" for h, v in sorted(agg.items(), key=lambda x: -x[1]) if v / tot > 0.005))
    for n, r in enumerate(rows):
        smp = int(r[ix["Warp Stall Sampling (All Samples)"]])
        if smp / tot > float(sys.argv[2]) if len(sys.argv) > 2 else 0.01:
            top = sorted(((int(r[ix[h]]), h[6:]) for h in stall_cols), reverse=True)[:3]
            print(f"  {n:5d} {smp / tot:6.3f} {r[ix['Source']].strip()[:60]:60s} " + " ".join(f"{h}:{v}" for v, h in top if v))
