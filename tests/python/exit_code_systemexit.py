# A host-language check of tilebook's Python VM (compared with python3).
import sys
print("before exit")
try:
    sys.exit(3)
except SystemExit as e:
    print("caught", e.code)
print("after")
