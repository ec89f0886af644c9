# A host-language check of tilebook's Python VM (compared with python3).
s = "  Hello, World  "
print(s.strip().lower(), s.split(","), "-".join(["a", "b"]), s.count("l"))
print("abc".center(9, "*"), "x".zfill(3), "a_b".title(), "Tab\tEnd".expandtabs(4))
print("hello world".partition(" "), "a,b,,c".split(",", 2), "ß".upper())
