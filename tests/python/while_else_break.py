# A host-language check of tilebook's Python VM (compared with python3).
def find(xs, t):
    i = 0
    while i < len(xs):
        if xs[i] == t:
            break
        i += 1
    else:
        return -1
    return i
print(find([1, 2, 3], 2), find([1, 2, 3], 9))
for i in range(3):
    pass
else:
    print("loop done", i)
