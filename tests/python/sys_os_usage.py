# A host-language check of tilebook's Python VM (compared with python3).
import sys, os, os.path
print(type(sys.argv).__name__, sys.maxsize > 2**31, os.path.join("a", "b", "c.py"))
print(os.path.splitext("x/y.tar.gz"), os.path.basename("/p/q.txt"), os.sep)
