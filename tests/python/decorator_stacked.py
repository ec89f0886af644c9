# A host-language check of tilebook's Python VM (compared with python3).
def a(f): return lambda: "a(" + f() + ")"
def b(f): return lambda: "b(" + f() + ")"
@a
@b
def c(): return "c"
print(c())
