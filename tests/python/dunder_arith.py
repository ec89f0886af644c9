# A host-language check of tilebook's Python VM (compared with python3).
class V:
    def __init__(self, *c): self.c = c
    def __add__(self, o): return V(*(a + b for a, b in zip(self.c, o.c)))
    def __mul__(self, k): return V(*(a * k for a in self.c))
    __rmul__ = __mul__
    def __neg__(self): return V(*(-a for a in self.c))
    def __repr__(self): return f"V{self.c}"
print(V(1, 2) + V(3, 4), 2 * V(1, 2), V(1, 2) * 3, -V(5, 6))
