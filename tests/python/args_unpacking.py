# A host-language check of tilebook's Python VM (compared with python3).
a, *rest = [1, 2, 3, 4]
*init, last = "hello"
x, (y, z) = 1, (2, 3)
print(a, rest, init, last, x, y, z)
print(*range(3), sep="-")
print({**{"a": 1}, "b": 2}, [*"ab", *(1, 2)])
