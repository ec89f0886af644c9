# A host-language check of tilebook's Python VM (compared with python3).
def g(v):
    try:
        r = int(v)
    except ValueError:
        print("bad", v)
        raise
    else:
        print("good", r)
    return r
g("5")
try:
    g("x")
except ValueError as e:
    print("caught", e)
