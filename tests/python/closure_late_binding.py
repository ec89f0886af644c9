# A host-language check of tilebook's Python VM (compared with python3).
fs = [lambda: i for i in range(3)]
gs = [lambda i=i: i for i in range(3)]
print([f() for f in fs], [g() for g in gs])
