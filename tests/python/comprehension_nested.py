# A host-language check of tilebook's Python VM (compared with python3).
m = [[i * 3 + j for j in range(3)] for i in range(3)]
t = [[row[i] for row in m] for i in range(3)]
print(t, [v for row in m for v in row if v % 2 == 0])
