#!/usr/bin/env python3
"""Time from starting `tilebook` (the REPL) in a pseudo-terminal to its first
prompt: the moment the line editor turns bracketed paste on, i.e. when keys
would be read. Prints min / median / max over N runs.

Usage: python3 bench/repl_startup.py [path/to/tilebook] [runs]
"""
import os, pty, select, statistics, sys, tempfile, time

BIN = sys.argv[1] if len(sys.argv) > 1 else "target/release/tilebook"
RUNS = int(sys.argv[2]) if len(sys.argv) > 2 else 20
READY = b"\x1b[?2004h"


def once(history):
    t0 = time.perf_counter()
    pid, fd = pty.fork()
    if pid == 0:
        os.environ.update(NO_COLOR="1", TERM="xterm", TILEBOOK_HISTORY=history)
        os.execv(BIN, [BIN])
    out = b""
    while READY not in out:
        r, _, _ = select.select([fd], [], [], 5.0)
        if not r:
            raise SystemExit(f"no prompt within 5 s: {out!r}")
        out += os.read(fd, 4096)
    elapsed = time.perf_counter() - t0
    os.write(fd, b"\x04")
    os.waitpid(pid, 0)
    os.close(fd)
    return elapsed * 1e3


with tempfile.TemporaryDirectory() as d:
    times = [once(os.path.join(d, "history")) for _ in range(RUNS)]
print(f"tilebook REPL first prompt over {RUNS} runs: min {min(times):.1f} ms, "
      f"median {statistics.median(times):.1f} ms, max {max(times):.1f} ms")
