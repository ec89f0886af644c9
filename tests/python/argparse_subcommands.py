# A host-language check of tilebook's Python VM (compared with python3).
import argparse
p = argparse.ArgumentParser(prog="tool")
sub = p.add_subparsers(dest="cmd")
r = sub.add_parser("run")
r.add_argument("file")
r.add_argument("--n", type=int, default=1)
print(vars(p.parse_args(["run", "a.py", "--n", "3"])))
