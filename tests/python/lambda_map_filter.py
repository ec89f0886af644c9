# A host-language check of tilebook's Python VM (compared with python3).
print(list(map(lambda x: x * 2, [1, 2])), list(filter(None, [0, 1, "", "a"])))
print(sorted(range(5), key=lambda x: (x % 2, -x)), (lambda *a: len(a))(1, 2, 3))
