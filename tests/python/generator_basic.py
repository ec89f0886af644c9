# A host-language check of tilebook's Python VM (compared with python3).
def gen(n):
    for i in range(n):
        yield i * i
g = gen(4)
print(next(g), next(g), list(g))
