# A host-language check of tilebook's Python VM (compared with python3).
class R:
    def __init__(self, n): self.n = n
    def __enter__(self): print("in", self.n); return self.n
    def __exit__(self, *a): print("out", self.n)
with R(1) as a, R(2) as b:
    print(a + b)
