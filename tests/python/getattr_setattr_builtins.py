# A host-language check of tilebook's Python VM (compared with python3).
class O: pass
o = O()
setattr(o, "x", 5)
print(getattr(o, "x"), getattr(o, "y", "none"), hasattr(o, "x"), vars(o))
delattr(o, "x")
print(hasattr(o, "x"), callable(print), callable(o))
