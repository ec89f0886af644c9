# A host-language check of tilebook's Python VM (compared with python3).
class P:
    __slots__ = ("x", "y")
    def __init__(self): self.x = 1; self.y = 2
p = P()
try:
    p.z = 3
except AttributeError:
    print("no z")
print(p.x + p.y, hasattr(p, "__dict__"))
