# A host-language check of tilebook's Python VM (compared with python3).
def make():
    total = 0
    def add(n):
        nonlocal total
        total += n
        return total
    return add
f = make()
f(3)
print(f(4))
