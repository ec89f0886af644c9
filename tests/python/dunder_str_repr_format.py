# A host-language check of tilebook's Python VM (compared with python3).
class Money:
    def __init__(self, c): self.c = c
    def __str__(self): return f"${self.c / 100:.2f}"
    def __repr__(self): return f"Money({self.c})"
    def __format__(self, spec): return format(self.c / 100, spec) + " USD"
m = Money(12345)
print(m, repr(m), [m], f"{m:>10.1f}")
