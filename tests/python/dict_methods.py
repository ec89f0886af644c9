# A host-language check of tilebook's Python VM (compared with python3).
d = {"a": 1, "b": 2}
d.setdefault("c", 3)
d.update(b=20)
print(d, d.get("z", 0), list(d.items()), d.pop("a"), d)
print({k: v for k, v in sorted(d.items(), key=lambda kv: -kv[1])})
