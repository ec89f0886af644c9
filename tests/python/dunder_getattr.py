# A host-language check of tilebook's Python VM (compared with python3).
class Proxy:
    def __init__(self, target): self._target = target
    def __getattr__(self, name):
        print("forward", name)
        return getattr(self._target, name)
p = Proxy([3, 1, 2])
p.sort()
print(p._target, p.count(1))
