# A host-language check of tilebook's Python VM (compared with python3).
import functools
@functools.total_ordering
class Version:
    def __init__(self, s): self.parts = tuple(int(p) for p in s.split("."))
    def __eq__(self, o): return self.parts == o.parts
    def __lt__(self, o): return self.parts < o.parts
    def __repr__(self): return ".".join(map(str, self.parts))
vs = [Version("1.10"), Version("1.2"), Version("0.9.1")]
print(sorted(vs), Version("1.2") <= Version("1.10"), max(vs))
