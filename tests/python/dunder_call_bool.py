# A host-language check of tilebook's Python VM (compared with python3).
class Adder:
    def __init__(self, n): self.n = n
    def __call__(self, x): return x + self.n
    def __bool__(self): return self.n != 0
add3 = Adder(3)
print(add3(4), bool(Adder(0)), bool(add3), list(map(add3, [1, 2])))
