# A host-language check of tilebook's Python VM (compared with python3).
from dataclasses import dataclass, asdict, replace
@dataclass(order=True, frozen=True)
class P:
    x: int
    y: int = 0
ps = sorted([P(2, 1), P(1, 5), P(1, 2)])
print(ps, asdict(ps[0]), replace(ps[0], y=9))
try:
    ps[0].x = 3
except Exception as e:
    print(type(e).__name__)
