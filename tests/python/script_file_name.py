# A script knows its own file, as `python3 FILE` tells it: scripts use it
# to find data or modules beside them.
import os
import sys

print(os.path.basename(__file__))
print(os.path.dirname(os.path.abspath(__file__)) == os.path.dirname(os.path.abspath(sys.argv[0])))
here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data.txt")
print(os.path.basename(here), __name__)
