# A host-language check of tilebook's Python VM (compared with python3).
data = [1, 5, 9, 3]
if (n := len(data)) > 3:
    print("long", n)
print([y for x in data if (y := x * 2) > 6])
