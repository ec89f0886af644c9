# A host-language check of tilebook's Python VM (compared with python3).
def inner():
    yield 1
    yield 2
    return "r"
def outer():
    r = yield from inner()
    yield r
print(list(outer()))
