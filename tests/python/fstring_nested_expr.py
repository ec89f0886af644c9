# A host-language check of tilebook's Python VM (compared with python3).
w = 7
vals = {"a": 1.5}
print(f"{vals['a']:{w}.{2}f}|{'x' * 3}|{w + 1 = }")
