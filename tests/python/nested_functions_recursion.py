# A host-language check of tilebook's Python VM (compared with python3).
def flatten(x):
    def go(v, out):
        if isinstance(v, (list, tuple)):
            for e in v:
                go(e, out)
        else:
            out.append(v)
        return out
    return go(x, [])
print(flatten([1, [2, (3, [4])], 5]))
