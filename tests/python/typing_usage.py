# A host-language check of tilebook's Python VM (compared with python3).
from typing import List, Dict, Optional, Tuple, Callable, Any, Union
def f(xs: List[int], d: Dict[str, int], o: Optional[int] = None) -> Tuple[int, int]:
    return sum(xs), len(d)
g: Callable[[int], int] = lambda x: x + 1
print(f([1, 2], {"a": 1}), g(1), f.__annotations__["return"])
