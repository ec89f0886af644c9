# A host-language check of tilebook's Python VM (compared with python3).
class C:
    shared = []
    def __init__(self): self.own = []
a, b = C(), C()
a.shared.append(1); a.own.append(2)
print(b.shared, b.own, C.shared is a.shared)
