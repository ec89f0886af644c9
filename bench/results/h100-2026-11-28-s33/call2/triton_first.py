import torch, triton, triton.language as tl, time, sys, shutil
shutil.copy('tests/ir/matmul.py', '/tmp/mm_src.py')
sys.path.insert(0, '/tmp')
from mm_src import matmul_kernel
exec(open('.carry/fl/first.py').read())
