# A host-language check of tilebook's Python VM (compared with python3).
words = ["banana", "Apple", "cherry", "apple"]
print(sorted(words), sorted(words, key=str.lower), sorted(words, key=len, reverse=True))
print(sorted([(1, "b"), (1, "a"), (0, "z")]), min(words, key=len), max([3, 1, 2]))
