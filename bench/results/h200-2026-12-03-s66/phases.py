# Per phase of gpu66.sh (marks.txt): the SM clock, power and clock-event
# reasons nvidia-smi sampled (smi.csv) while the GPU was busy (> 300 W).
# 0x4 is the software power cap. Run: python3 phases.py (in this folder).
import collections, datetime as dt

def when(t):
    return dt.datetime.strptime(t.strip(), "%Y/%m/%d %H:%M:%S.%f")

marks = [(when(l[:23]), l[24:].split()[0]) for l in open("marks.txt")]
rows = []
for line in open("smi.csv"):
    f = [x.strip() for x in line.split(",")]
    rows.append((when(f[0]), float(f[1].split()[0]), float(f[2].split()[0]), f[4]))
for (start, who), (end, _) in zip(marks[::2], marks[1::2]):
    busy = [r for r in rows if start <= r[0] <= end and r[2] > 300]
    clock = sum(r[1] for r in busy) / len(busy)
    power = sum(r[2] for r in busy) / len(busy)
    reasons = dict(collections.Counter(r[3] for r in busy).most_common(2))
    print(f"{who:7s} {len(busy):3d} samples: SM clock {clock:6.0f} MHz, power {power:5.1f} W, reasons {reasons}")
