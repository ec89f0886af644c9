# A host-language check of tilebook's Python VM (compared with python3).
from dataclasses import dataclass, field
@dataclass
class Item:
    name: str
    price: float = 0.0
    tags: list = field(default_factory=list)
i = Item("pen", 1.5)
i.tags.append("office")
print(i, i == Item("pen", 1.5, ["office"]))
