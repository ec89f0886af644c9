import math
import torch


class Meter:
    def __init__(self, name):
        self.name = name
        self.values = []

    def add(self, v):
        self.values.append(v)
        return self

    @property
    def mean(self):
        return sum(self.values) / len(self.values)


m = Meter("x")
for i in range(10):
    m.add(i * 0.5)
t = torch.arange(12, dtype=torch.float32).reshape(3, 4)
u = t.t() @ t
print(m.mean, math.sqrt(m.mean), u.sum().item(), t[1, 2].item(), t[:, 1].tolist())
v = torch.zeros(5)
v[2] = 3.0
w = (t > 4).float().sum(dim=0)
print(v.tolist(), w.tolist(), t.max(dim=1).values.tolist(), t.var().item())
