# A host-language check of tilebook's Python VM (compared with python3).
registry = []
class Plugin:
    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        registry.append(cls.__name__)
class A(Plugin): pass
class B(Plugin): pass
print(registry)
