# A host-language check of tilebook's Python VM (compared with python3).
x, n, s = 3.14159, 42, "hi"
print(f"{x:.2f}|{x:10.3f}|{x:<8.1f}|{n:05d}|{n:x}|{n:#o}|{n:b}|{s:>5}|{s:^6}|")
print(f"{1234567.891:,.2f} {0.25:.1%} {1e-5:e} {n!r} {s!r}")
