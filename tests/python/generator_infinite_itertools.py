# A host-language check of tilebook's Python VM (compared with python3).
import itertools
def naturals():
    n = 0
    while True:
        yield n
        n += 1
print(list(itertools.islice(naturals(), 3, 8)))
print(list(itertools.takewhile(lambda x: x < 4, naturals())))
