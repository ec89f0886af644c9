# A host-language check of tilebook's Python VM (compared with python3).
def repeat(n):
    def deco(f):
        def w(*a):
            return [f(*a) for _ in range(n)]
        return w
    return deco
@repeat(3)
def one(): return 1
print(one())
