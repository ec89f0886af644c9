# A host-language check of tilebook's Python VM (compared with python3).
import copy
a = [[1, 2], [3]]
b = copy.copy(a); c = copy.deepcopy(a)
a[0].append(9)
print(b, c, a is b, a[0] is b[0], a == copy.deepcopy(a))
