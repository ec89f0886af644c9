# A host-language check of tilebook's Python VM (compared with python3).
def f(a, b=2, *args, c, d=4, **kw):
    return (a, b, args, c, d, sorted(kw.items()))
print(f(1, c=3))
print(f(1, 5, 6, 7, c=8, e=9, f=10))
print(f(*[1, 2, 3], **{"c": 0, "z": 1}))
