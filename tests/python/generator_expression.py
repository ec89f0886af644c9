# A host-language check of tilebook's Python VM (compared with python3).
squares = (x * x for x in range(10) if x % 2)
print(sum(squares), any(x > 5 for x in [1, 7]), all(x for x in []))
