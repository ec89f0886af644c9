# A host-language check of tilebook's Python VM (compared with python3).
class CountCalls:
    def __init__(self, f): self.f, self.n = f, 0
    def __call__(self, *a):
        self.n += 1
        return self.f(*a)
@CountCalls
def sq(x): return x * x
sq(2); sq(3)
print(sq.n, sq(4))
