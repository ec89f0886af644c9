# A host-language check of tilebook's Python VM (compared with python3).
def f(a, b, /, c, *, d):
    return a + b + c + d
print(f(1, 2, 3, d=4), f(1, 2, c=3, d=4))
try:
    f(a=1, b=2, c=3, d=4)
except TypeError:
    print("positional only")
