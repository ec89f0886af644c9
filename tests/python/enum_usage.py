# A host-language check of tilebook's Python VM (compared with python3).
from enum import Enum, auto
class Color(Enum):
    RED = auto()
    GREEN = auto()
print(Color.RED, Color.GREEN.value, Color["RED"] is Color.RED, [c.name for c in Color])
