# A host-language check of tilebook's Python VM (compared with python3).
print(None is None, [] or "default", 0 and 1, not "", True + True, bool([0]))
x = None
print(x if x is not None else "unset")
