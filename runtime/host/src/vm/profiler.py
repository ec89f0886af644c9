

# ---------------------------------------------------------------- triton.profiler
#
# A small profiler of tilebook's own with proton's calls. Scopes and (with
# `start(hook="triton")`) kernel launches are timed on the host clock with
# the GPU synchronized at their end, so a launch's time is its kernel's plus
# the launch itself (a few microseconds). Metrics given to a scope or
# returned by a kernel's `launch_metadata` (flops16, bytes, ...) are summed
# per scope. `finalize()` prints the table and writes `<name>.hatchet`
# (tilebook's JSON, read by `triton.profiler.viewer`).


class _Profiler:
    def __init__(self):
        self.name = None
        self.active = False
        self.stack = []
        self.rows = {}
        self.launches = []
        self.hooked = False

    def start(self, name=None, context="shadow", data="tree", backend=None, hook=None, **kwargs):
        self.name = name or "proton"
        self.rows = {}
        if hook not in (None, "triton"):
            raise ValueError("triton.profiler.start: hook %r is not supported in tilebook (None or 'triton')" % (hook,))
        self.hooked = hook == "triton"
        self.activate()
        return 0

    # The launch hook is installed only while the profiler is active, so
    # launches between `deactivate()` and `activate()` (a benchmark's warm-up)
    # cost nothing extra.
    def activate(self, session=None):
        self.active = True
        if self.hooked:
            self.launches = []
            _tb.set_launch_hook(self._launch)

    def deactivate(self, session=None):
        self.active = False
        if self.hooked:
            _tb.set_launch_hook(None)

    def _add(self, name, ms, metrics):
        path = "/".join([n for n, _, _ in self.stack] + [name])
        row = self.rows.setdefault(path, {"calls": 0, "ms": 0.0, "metrics": {}})
        row["calls"] += 1
        row["ms"] += ms
        for key, value in (metrics or {}).items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                row["metrics"][key] = row["metrics"].get(key, 0.0) + float(value)

    def enter_scope(self, name, triton_op=False, metrics=None):
        import time

        self.stack.append((name, time.perf_counter(), metrics))

    def exit_scope(self, triton_op=False, metrics=None):
        import time
        import torch

        if not self.stack:
            return
        name, t0, given = self.stack.pop()
        if self.active:
            torch.cuda.synchronize()
            self._add(name, (time.perf_counter() - t0) * 1000.0, dict(given or {}, **(metrics or {})))

    def _launch(self, kernel, grid, args, phase):
        import time
        import torch

        if phase == "enter":
            self.launches.append(time.perf_counter())
            return
        t0 = self.launches.pop() if self.launches else time.perf_counter()
        if not self.active or self.name is None:
            return
        torch.cuda.synchronize()
        ms = (time.perf_counter() - t0) * 1000.0
        meta = kernel.launch_metadata
        info = meta(grid, kernel, args) if meta is not None else {}
        info = dict(info or {})
        self._add(str(info.pop("name", kernel.name)), ms, info)

    def scope(self, name, metrics=None):
        return _Scope(self, name, metrics)

    def finalize(self, session=None, output_format=None):
        import json

        _tb.set_launch_hook(None)
        self.hooked = False
        if self.name is None:
            return
        print("profile %s (tilebook's profiler: host time per scope and launch, GPU synchronized)" % self.name)
        width = max([len(p) for p in self.rows] + [5])
        print("%s  %6s  %10s  %10s" % ("scope".ljust(width), "calls", "total ms", "mean ms"))
        for path, row in self.rows.items():
            print("%s  %6d  %10.3f  %10.3f" % (path.ljust(width), row["calls"], row["ms"], row["ms"] / row["calls"]))
        with open(self.name + ".hatchet", "w") as f:
            json.dump({"profiler": "tilebook", "scopes": self.rows}, f, indent=1)
        self.name = None
        self.active = False


def _viewer_parse(metric_names, file_name):
    """`triton.profiler.viewer.parse`: the scopes of a profile tilebook wrote,
    and the metrics to show (time/ms, time/us, tflop16/s, tflop8/s,
    tflop/s, gbyte/s, calls)."""
    import json

    with open(file_name) as f:
        data = json.load(f)
    if data.get("profiler") != "tilebook":
        raise ValueError("%s was not written by tilebook's profiler" % file_name)
    known = ("time/ms", "time/us", "time/s", "tflop16/s", "tflop8/s", "tflop32/s", "tflop/s", "gbyte/s", "calls")
    for m in metric_names:
        if m not in known:
            raise ValueError("triton.profiler.viewer: metric %r is not among tilebook's (%s)" % (m, ", ".join(known)))
    return data["scopes"], list(metric_names)


def _metric(row, name):
    seconds = row["ms"] / 1000.0
    mets = row["metrics"]
    if name == "calls":
        return row["calls"]
    if name.startswith("time/"):
        return row["ms"] * {"time/ms": 1.0, "time/us": 1000.0, "time/s": 0.001}[name]
    if name == "gbyte/s":
        return mets.get("bytes", 0.0) / seconds / 1e9 if seconds else 0.0
    width = name[len("tflop"):-len("/s")]
    if width:
        flops = mets.get("flops" + width, 0.0)
    else:
        flops = sum(v for k, v in mets.items() if k.startswith("flops"))
    return flops / seconds / 1e12 if seconds else 0.0


def _viewer_print_tree(tree, metrics):
    """`triton.profiler.viewer.print_tree`: one line per scope, metrics first."""
    print("  ".join("%12s" % m for m in metrics) + "  scope")
    for path, row in tree.items():
        print("  ".join("%12.3f" % _metric(row, m) for m in metrics) + "  " + path)


class _Scope:
    """`with triton.profiler.scope(name, metrics):`, or as a decorator."""

    def __init__(self, prof, name, metrics):
        self.prof = prof
        self.name = name
        self.metrics = metrics

    def __enter__(self):
        self.prof.enter_scope(self.name, metrics=self.metrics)
        return self

    def __exit__(self, *exc):
        self.prof.exit_scope()
        return False

    def __call__(self, fn):
        def wrapped(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)

        return wrapped


_prof = _Profiler()
_proton = _types.ModuleType("triton.profiler")
for _attr in ("start", "activate", "deactivate", "enter_scope", "exit_scope", "scope", "finalize"):
    setattr(_proton, _attr, getattr(_prof, _attr))
_proton.viewer = _types.ModuleType("triton.profiler.viewer")
_proton.viewer.parse = _viewer_parse
_proton.viewer.print_tree = _viewer_print_tree
sys.modules["triton.profiler"] = _proton
sys.modules["triton.profiler.viewer"] = _proton.viewer
_EXTRA["triton"]["profiler"] = _proton
del _attr


def _jit_with_options():
    native = _tb.getattr(_tb.module("triton"), "jit")

    def jit(fn=None, **options):
        """triton.jit(fn) / triton.jit(**options)(fn); `launch_metadata=`
        names launches for the profiler's hook."""
        if fn is None:
            return lambda f: jit(f, **options)
        kernel = native(fn, **options)
        if options.get("launch_metadata") is not None:
            _tb.set_launch_metadata(kernel, options["launch_metadata"])
        return kernel

    jit._tilebook_doc = "triton.jit"
    return jit


_EXTRA["triton"]["jit"] = _jit_with_options()
