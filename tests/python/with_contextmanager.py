# A host-language check of tilebook's Python VM (compared with python3).
from contextlib import contextmanager
@contextmanager
def section(name):
    print("enter", name)
    try:
        yield name.upper()
    finally:
        print("exit", name)
with section("a") as s:
    print(s)
