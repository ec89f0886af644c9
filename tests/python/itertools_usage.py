# A host-language check of tilebook's Python VM (compared with python3).
import itertools as it
print(list(it.product("ab", [1, 2])), list(it.permutations(range(3), 2))[:3])
print(list(it.combinations("abcd", 2))[:4], list(it.accumulate([1, 2, 3, 4])))
print([(k, len(list(g))) for k, g in it.groupby("aaabbc")], list(it.chain([1], (2, 3))))
