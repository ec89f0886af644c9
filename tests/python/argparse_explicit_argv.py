# A host-language check of tilebook's Python VM (compared with python3).
import argparse
p = argparse.ArgumentParser(prog="bench")
p.add_argument("--size", type=int, default=1024)
p.add_argument("--dtype", choices=["fp16", "fp32"], default="fp32")
p.add_argument("-v", "--verbose", action="store_true")
p.add_argument("names", nargs="*")
a = p.parse_args(["--size", "4096", "-v", "x", "y"])
print(a.size, a.dtype, a.verbose, a.names)
