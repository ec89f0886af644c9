# A host-language check of tilebook's Python VM (compared with python3).
print([x * y for x in range(3) for y in range(3) if x != y])
print({k: v for k, v in zip("abc", range(3))})
print(sorted({x % 3 for x in range(10)}))
