# A host-language check of tilebook's Python VM (compared with python3).
class Key:
    def __init__(self, a): self.a = a
    def __eq__(self, o): return isinstance(o, Key) and self.a % 10 == o.a % 10
    def __hash__(self): return hash(self.a % 10)
d = {Key(1): "one", Key(12): "two"}
print(d[Key(21)], d[Key(2)], len({Key(3), Key(13), Key(4)}))
