# A host-language check of tilebook's Python VM (compared with python3).
def acc():
    total = 0
    while True:
        x = yield total
        if x is None:
            return total
        total += x
g = acc()
next(g)
print(g.send(5), g.send(10))
try:
    g.send(None)
except StopIteration as e:
    print("done", e.value)
