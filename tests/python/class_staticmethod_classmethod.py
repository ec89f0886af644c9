# A host-language check of tilebook's Python VM (compared with python3).
class Counter:
    made = 0
    def __init__(self):
        Counter.made += 1
    @staticmethod
    def double(x):
        return 2 * x
    @classmethod
    def create(cls, n):
        return [cls() for _ in range(n)]
Counter.create(3)
print(Counter.made, Counter.double(21))
