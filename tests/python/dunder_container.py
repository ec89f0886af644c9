# A host-language check of tilebook's Python VM (compared with python3).
class Grid:
    def __init__(self, w, h): self.w, self.h, self.cells = w, h, {}
    def __getitem__(self, k): return self.cells.get(k, 0)
    def __setitem__(self, k, v): self.cells[k] = v
    def __len__(self): return self.w * self.h
    def __contains__(self, k): return k in self.cells
    def __iter__(self): return iter(sorted(self.cells))
g = Grid(3, 2)
g[0, 1] = 5
g[2, 0] = 7
print(len(g), g[0, 1], g[1, 1], (2, 0) in g, list(g))
