# A host-language check of tilebook's Python VM (compared with python3).
from abc import ABC, abstractmethod
class Shape(ABC):
    @abstractmethod
    def area(self): ...
class Sq(Shape):
    def __init__(self, s): self.s = s
    def area(self): return self.s ** 2
try:
    Shape()
except TypeError:
    print("abstract")
print(Sq(3).area())
