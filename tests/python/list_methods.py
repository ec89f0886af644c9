# A host-language check of tilebook's Python VM (compared with python3).
xs = [3, 1, 2]
xs.append(5); xs.insert(0, 9); xs.extend([7, 7])
xs.remove(7)
print(xs, xs.index(2), xs.count(7), xs.pop(), xs[::-1], xs[1:4])
xs.sort(); print(xs)
