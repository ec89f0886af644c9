# A host-language check of tilebook's Python VM (compared with python3).
class Tag:
    def __init__(self, name): self.name = name
    def __enter__(self):
        print(f"<{self.name}>")
        return self
    def __exit__(self, et, ev, tb):
        print(f"</{self.name}>", et.__name__ if et else None)
        return et is KeyError
with Tag("a"):
    with Tag("b"):
        print("body")
with Tag("c"):
    raise KeyError("x")
print("after")
