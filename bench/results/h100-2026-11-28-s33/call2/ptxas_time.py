import subprocess, sys, time, re
for p in sys.argv[1:]:
    n = sum(1 for _ in open(p))
    for o in (0, 1, 2, 3):
        ts = []
        for rep in range(3):
            t = time.perf_counter()
            r = subprocess.run(['/usr/local/cuda/bin/ptxas', '-arch=sm_90a', f'-O{o}', '-v', p, '-o', f'/tmp/x{o}.cubin'], capture_output=True, text=True)
            ts.append(time.perf_counter() - t)
        regs = re.findall(r'Used (\d+) registers', r.stderr)
        spill = re.findall(r'(\d+) bytes spill stores', r.stderr)
        sass = subprocess.run(['/usr/local/cuda/bin/cuobjdump', '-sass', f'/tmp/x{o}.cubin'], capture_output=True, text=True).stdout
        print(f"{p} lines={n} O{o} ptxas {min(ts)*1000:.1f} ms (runs {[round(x*1000) for x in ts]}) regs={regs} spill={spill} sass_lines={sass.count(chr(10))} FFMA={sass.count('FFMA')} FMUL={sass.count('FMUL')} rc={r.returncode}", flush=True)
