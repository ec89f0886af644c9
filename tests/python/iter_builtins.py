# A host-language check of tilebook's Python VM (compared with python3).
it = iter([1, 2, 3])
print(next(it), next(it), next(it), next(it, "end"))
print(list(reversed([1, 2, 3])), sum([[1], [2]], []), list(range(10, 0, -3)))
