# A host-language check of tilebook's Python VM (compared with python3).
from collections import Counter, defaultdict, OrderedDict, deque, namedtuple
c = Counter("mississippi")
print(c.most_common(2))
d = defaultdict(list)
for k, v in [("a", 1), ("b", 2), ("a", 3)]:
    d[k].append(v)
print(dict(d))
q = deque([1, 2, 3], maxlen=3)
q.append(4); q.appendleft(0)
print(list(q))
Pt = namedtuple("Pt", "x y")
p = Pt(1, 2)
print(p, p._replace(x=5), p.x + p.y)
