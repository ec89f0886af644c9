# A host-language check of tilebook's Python VM (compared with python3).
rows = [("vector add", 3037.2), ("softmax", 2891.0)]
print(f"{'kernel':<12}{'GB/s':>8}")
for name, v in rows:
    print(f"{name:<12}{v:>8.1f}")
