# A host-language check of tilebook's Python VM (compared with python3).
def counter():
    c = 0
    def inc():
        nonlocal c
        c += 1
        return c
    def get():
        return c
    return inc, get
inc, get = counter()
inc(); inc(); inc()
print(get())
