# A host-language check of tilebook's Python VM (compared with python3).
for i, (a, b) in enumerate(zip("abc", [1, 2, 3]), start=1):
    print(i, a, b)
print(list(zip(*[(1, "a"), (2, "b")])), dict(enumerate("xy")))
