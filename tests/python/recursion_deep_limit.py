# A host-language check of tilebook's Python VM (compared with python3).
import sys
def depth(n):
    return 0 if n == 0 else 1 + depth(n - 1)
print(depth(500))
try:
    depth(100000)
except RecursionError:
    print("RecursionError")
