# A host-language check of tilebook's Python VM (compared with python3).
print(7 // 2, -7 // 2, 7 % -3, 2 ** 100, 10 / 4, int("ff", 16), float("1e3"))
print(round(2.5), round(3.5), abs(-3), divmod(17, 5), 0.1 + 0.2, 1 / 3)
