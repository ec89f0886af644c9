# The Python side of tilebook's host bindings, run once when the VM starts.
#
# Values of the session's native library (tensors, dtypes, kernels, modules)
# reach Python as instances of the classes below; each is a `_tb.Handle`
# (the Rust value) whose Python protocol forwards to the native functions of
# `_tb`. `torch`, `triton`, `triton.language` and `tilebook` are registered in
# `sys.modules`, so `import` finds them as it finds any module.
import sys
import _tb


class _Obj(_tb.Handle):
    """A value of tilebook's native library."""

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _tb.getattr(self, name)

    def __setattr__(self, name, value):
        try:
            object.__setattr__(self, name, value)
        except AttributeError:
            # A tensor's repr can run to many lines: name its type instead.
            what = "a torch.Tensor" if isinstance(self, Tensor) else _tb.repr(self)
            raise AttributeError("attribute '%s' of %s cannot be set" % (name, what)) from None

    def __delattr__(self, name):
        try:
            object.__delattr__(self, name)
        except AttributeError:
            # Names the native type when it has no such attribute at all.
            _tb.getattr(self, name)
            what = "a torch.Tensor" if isinstance(self, Tensor) else _tb.repr(self)
            raise AttributeError("attribute '%s' of %s cannot be deleted" % (name, what)) from None

    def __repr__(self):
        return _tb.repr(self)

    def __str__(self):
        return _tb.str(self)

    def __format__(self, spec):
        return _tb.format(self, spec)

    def __dir__(self):
        return _tb.members(self)

    def __eq__(self, other):
        return _tb.cmp("==", self, other)

    def __ne__(self, other):
        return _tb.cmp("!=", self, other)

    def __hash__(self):
        return hash(_tb.repr(self))

    def __len__(self):
        return _tb.len(self)

    def __iter__(self):
        return iter(_tb.iter(self))

    def __bool__(self):
        return _tb.truth(self)


def _binary(op):
    def forward(self, other):
        return _tb.binop(op, self, other)

    def reverse(self, other):
        return _tb.binop(op, other, self)

    return forward, reverse


class Tensor(_Obj):
    """A torch-style tensor (tilebook's tensor library)."""

    __add__, __radd__ = _binary("+")
    __sub__, __rsub__ = _binary("-")
    __mul__, __rmul__ = _binary("*")
    __truediv__, __rtruediv__ = _binary("/")
    __floordiv__, __rfloordiv__ = _binary("//")
    __mod__, __rmod__ = _binary("%")
    __pow__, __rpow__ = _binary("**")
    __matmul__, __rmatmul__ = _binary("@")
    __and__, __rand__ = _binary("&")
    __or__, __ror__ = _binary("|")
    __xor__, __rxor__ = _binary("^")
    __lshift__, __rlshift__ = _binary("<<")
    __rshift__, __rrshift__ = _binary(">>")

    def __neg__(self):
        return _tb.unop("-", self)

    def __pos__(self):
        return self

    def __invert__(self):
        return _tb.unop("~", self)

    def __abs__(self):
        return _tb.getattr(self, "abs")()

    def __lt__(self, other):
        return _tb.cmp("<", self, other)

    def __le__(self, other):
        return _tb.cmp("<=", self, other)

    def __gt__(self, other):
        return _tb.cmp(">", self, other)

    def __ge__(self, other):
        return _tb.cmp(">=", self, other)

    def __float__(self):
        return float(_tb.getattr(self, "item")())

    def __int__(self):
        return int(_tb.getattr(self, "item")())

    def __index__(self):
        if self.dtype.is_floating_point or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(_tb.getattr(self, "item")())

    __hash__ = object.__hash__


Tensor.__module__ = "torch"
_tb.register_class("Tensor", Tensor)
_tb.register_class("Obj", _Obj)


class _Module(_Obj):
    """A native module (torch, triton, triton.language, tilebook)."""

    def __getattr__(self, name):
        extra = _EXTRA.get(_tb.module_name(self), {})
        if name in extra:
            return extra[name]
        if name == "__name__":
            return _tb.module_name(self)
        if name.startswith("__") and name.endswith("__"):
            try:
                return _tb.getattr(self, name)
            except Exception:
                raise AttributeError(name) from None
        value = _tb.getattr(self, name)
        # A module's members never change (but the active driver), so the
        # next read finds this one in the instance without `__getattr__`.
        if name != "active":
            self.__dict__[name] = value
        return value

    def __dir__(self):
        return sorted(set(_tb.members(self)) | set(_EXTRA.get(_tb.module_name(self), {})))

    def __repr__(self):
        return "<module '%s' (tilebook)>" % _tb.module_name(self)

    __hash__ = object.__hash__


_tb.register_class("Module", _Module)


class _Stream:
    """`sys.stdout` and `sys.stderr`: text goes to the cell's outputs."""

    def __init__(self, name):
        self.name = name

    def write(self, text):
        _tb.write(self.name, text)
        return len(text)

    def flush(self):
        pass

    def isatty(self):
        return False

    @property
    def encoding(self):
        return "utf-8"


sys.stdout = _Stream("stdout")
sys.stderr = _Stream("stderr")


def _frames(exc):
    """(file, line) of every frame of `exc`'s traceback, outermost first."""
    out = []
    tb = exc.__traceback__
    while tb is not None:
        out.append((tb.tb_frame.f_code.co_filename, tb.tb_lineno))
        tb = tb.tb_next
    return out


_tb.register_class("frames", _frames)

# Modules by their import names; `_tb.module` gives the native module object.
_MODULES = {
    "torch": "torch",
    "torch.cuda": "torch.cuda",
    "torch.nn": "torch.nn",
    "torch.nn.functional": "torch.nn.functional",
    "triton": "triton",
    "triton.language": "tl",
    "triton.language.math": "tl.math",
    "triton.language.extra": "tl.extra",
    "triton.language.extra.libdevice": "tl.extra.cuda.libdevice",
    "triton.language.extra.cuda": "tl.extra.cuda",
    "triton.language.extra.cuda.libdevice": "tl.extra.cuda.libdevice",
    "triton.testing": "triton.testing",
    "triton.runtime": "triton.runtime",
    "triton.runtime.driver": "triton.runtime.driver",
    "tilebook": "tilebook",
}
class Size(tuple):
    """torch.Size: a tensor's shape, a tuple that prints as torch prints it."""

    def __repr__(self):
        return "torch.Size([%s])" % ", ".join(str(d) for d in self)

    def __getitem__(self, i):
        got = tuple.__getitem__(self, i)
        return Size(got) if isinstance(i, slice) else got

    __str__ = __repr__

    def numel(self):
        n = 1
        for d in self:
            n *= d
        return n


Size.__module__ = "torch"
_tb.register_class("Size", Size)


def _size(self, dim=None):
    if dim is None:
        return _tb.shape(self)
    return _tb.call_method(self, "size", (dim,), {})


Tensor.shape = property(_tb.shape)
Tensor.size = _size


def _field(name):
    return property(lambda self: _tb.getattr(self, name))


def _method(name):
    def method(self, *args, **kwargs):
        return _tb.call_method(self, name, args, kwargs)

    method.__name__ = name
    return method


# The native attributes and methods as members of the class, so that reading
# one finds it at once instead of failing the class lookup first and then
# asking `__getattr__` (which costs RustPython an AttributeError per read).
_fields, _methods = _tb.tensor_members()
for _name in _fields:
    if _name not in Tensor.__dict__:
        setattr(Tensor, _name, _field(_name))
for _name in _methods:
    if _name not in Tensor.__dict__:
        setattr(Tensor, _name, _method(_name))
del _fields, _methods, _name

_EXTRA = {"torch": {"Tensor": Tensor, "Size": Size}}


class _CudaDevice:
    """`with torch.cuda.device(d):` makes GPU `d` the current device inside
    the block and restores the previous one after (`d` is checked when the
    block starts, as `torch.cuda.set_device` checks it)."""

    def __init__(self, device):
        self.device = device
        self.previous = None

    def __enter__(self):
        import torch

        self.previous = torch.cuda.current_device()
        torch.cuda.set_device(self.device)
        return self

    def __exit__(self, *exc):
        import torch

        torch.cuda.set_device(self.previous)
        return False


class _CudaEvent:
    """torch.cuda.Event(enable_timing=False): a point in the GPU's stream.
    `record()` places it after the work queued so far; `elapsed_time(end)`
    gives the milliseconds between two recorded events (waiting for the
    second); on the CPU backend, where a launch returns when its kernel has
    run, an event is the host clock at `record()`."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        self.enable_timing = enable_timing
        self._number = None

    def record(self, stream=None):
        import torch

        self._number = torch.cuda._event_record(self._number)

    def synchronize(self):
        import torch

        torch.cuda._event_wait(self._number)

    def query(self):
        # Answered by waiting: the work before the event is then done.
        self.synchronize()
        return True

    def wait(self, stream=None):
        # One stream per device: later work already follows the event.
        pass

    def elapsed_time(self, end_event):
        import torch

        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        return torch.cuda._event_elapsed(self._number, end_event._number)

    def __del__(self):
        if self._number is not None:
            import torch

            torch.cuda._event_free(self._number)


class _CudaStream:
    """torch.cuda.Stream(device=None): the device's one stream (tilebook
    queues all of a GPU's work on one stream, in order). `synchronize()`
    waits for it; waiting for another stream or an event is implied."""

    def __init__(self, device=None, priority=0):
        self.device = device

    def synchronize(self):
        import torch

        torch.cuda.synchronize()

    def record_event(self, event=None):
        event = _CudaEvent() if event is None else event
        event.record(self)
        return event

    def wait_event(self, event):
        pass

    def wait_stream(self, stream):
        pass

    def query(self):
        self.synchronize()
        return True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _current_stream(device=None):
    """torch.cuda.current_stream(device=None): the device's one stream."""
    return _CudaStream(device)


def _default_stream(device=None):
    """torch.cuda.default_stream(device=None): the device's one stream."""
    return _CudaStream(device)


def _stream_context(stream):
    """`with torch.cuda.stream(s):` accepted; work stays on the device's one
    stream, in order."""
    return stream if stream is not None else _CudaStream()


_EXTRA["torch.cuda"] = {
    "device": _CudaDevice,
    "Event": _CudaEvent,
    "Stream": _CudaStream,
    "current_stream": _current_stream,
    "default_stream": _default_stream,
    "stream": _stream_context,
}


class TensorDescriptor:
    """A tensor with a block shape, passed to a kernel: there the parameter
    is a tensor descriptor (desc.load(offsets), desc.store(offsets, block));
    blocks reaching past the tensor's edge read the padding and are not
    written there."""

    def __init__(self, base, shape, strides, block_shape, padding="zero"):
        shape, strides, block_shape = list(shape), list(strides), list(block_shape)
        if not len(shape) == len(strides) == len(block_shape):
            raise ValueError("TensorDescriptor: shape, strides and block_shape must have one length")
        if not strides or strides[-1] != 1:
            raise ValueError("TensorDescriptor: the last dimension must be contiguous (stride 1)")
        size = base.element_size()
        for s in strides[:-1]:
            if (s * size) % 16:
                raise ValueError("TensorDescriptor: every stride but the last must be a multiple of 16 bytes, got %d elements of %d bytes" % (s, size))
        if padding not in ("zero", "nan"):
            raise ValueError("TensorDescriptor: padding must be 'zero' or 'nan', got %r" % (padding,))
        self.base = base
        self.shape = shape
        self.strides = strides
        self.block_shape = block_shape
        self.padding = padding

    @staticmethod
    def from_tensor(tensor, block_shape, padding="zero"):
        return TensorDescriptor(tensor, tensor.shape, tensor.stride(), block_shape, padding)

    def __repr__(self):
        return "TensorDescriptor(shape=%s, strides=%s, block_shape=%s, padding=%r)" % (
            self.shape, self.strides, self.block_shape, self.padding)


import types as _types

_tools = _types.ModuleType("triton.tools")
_tools.tensor_descriptor = _types.ModuleType("triton.tools.tensor_descriptor")
_tools.tensor_descriptor.TensorDescriptor = TensorDescriptor
TensorDescriptor.__module__ = "triton.tools.tensor_descriptor"
sys.modules["triton.tools"] = _tools
sys.modules["triton.tools.tensor_descriptor"] = _tools.tensor_descriptor
_EXTRA["triton"] = {"tools": _tools}


class _CublasLt:
    """`triton._C.libtriton.nvidia.cublas.CublasLt(workspace)`, the cuBLAS
    handle tutorial 09 benchmarks against: `matmul(a, b, c)` writes
    c = a @ bᵀ (b is N×K) through tilebook's own cuBLAS binding (the host on
    the CPU backend); `fp8_scaled_matmul` also scales by two scalars."""

    def __init__(self, workspace):
        self.workspace = workspace

    def matmul(self, a, b, c):
        import torch

        with torch.no_grad():
            if c.dtype == a.dtype:
                torch.matmul(a, b.T, out=c)
            else:
                c.copy_(torch.matmul(a, b.T).to(c.dtype))

    def fp8_scaled_matmul(self, a, b, c, scale_a, scale_b):
        import torch

        with torch.no_grad():
            out = torch.matmul(a.float(), b.float().T) * float(scale_a) * float(scale_b)
            c.copy_(out.to(c.dtype))


_libtriton = _types.ModuleType("triton._C.libtriton")
_libtriton.nvidia = _types.ModuleType("triton._C.libtriton.nvidia")
_libtriton.nvidia.cublas = _types.ModuleType("triton._C.libtriton.nvidia.cublas")
_libtriton.nvidia.cublas.CublasLt = _CublasLt
_triton_c = _types.ModuleType("triton._C")
_triton_c.libtriton = _libtriton
for _name, _mod in (("triton._C", _triton_c), ("triton._C.libtriton", _libtriton),
                    ("triton._C.libtriton.nvidia", _libtriton.nvidia),
                    ("triton._C.libtriton.nvidia.cublas", _libtriton.nvidia.cublas)):
    sys.modules[_name] = _mod
_EXTRA["triton"]["_C"] = _triton_c
del _name, _mod

# Notebook builtins, as IPython provides them; `help` shows tilebook's docs.
import builtins as _builtins

for _name in ("display", "clear_output", "help"):
    setattr(_builtins, _name, _tb.builtin(_name))
# Source text compiled at run time is checked for nesting first, as cells
# are (the VM's compiler would overflow the stack on `'(' * 10000`).
for _name in ("eval", "exec", "compile"):
    setattr(_tb, "original_" + _name, getattr(_builtins, _name))
    setattr(_builtins, _name, getattr(_tb, _name))
for _name, _native in _MODULES.items():
    sys.modules[_name] = _tb.module(_native)
del _name, _native


class _ExtensionModules:
    """An import finder: a module that only exists as compiled C code
    (numpy, ...) gets an ImportError that says why, not a confusing one."""

    KNOWN = {"numpy", "scipy", "pandas", "matplotlib", "cupy", "numba"}

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        import os

        top = name.partition(".")[0]
        if top != name:
            return None
        compiled = False
        for entry in sys.path:
            folder = os.path.join(entry or ".", top)
            try:
                names = os.listdir(entry or ".")
            except OSError:
                continue
            if any(n.startswith(top + ".") and n.endswith((".so", ".pyd")) for n in names):
                compiled = True
            elif os.path.isdir(folder):
                try:
                    compiled = compiled or any(n.endswith(".so") for n in os.listdir(folder))
                except OSError:
                    pass
        if compiled or top in cls.KNOWN:
            raise ModuleNotFoundError(
                "No module named '%s': it is an extension module (compiled C code) and "
                "tilebook's Python VM runs pure-Python packages only; torch and triton "
                "are built in" % top,
                name=top,
            )
        return None


# Before the path finder (after the built-in and frozen ones), so that a
# compiled package on a site-packages folder is named as such.
_finders = [type(f).__name__ if not isinstance(f, type) else f.__name__ for f in sys.meta_path]
sys.meta_path.insert(_finders.index("PathFinder") if "PathFinder" in _finders else len(_finders),
                     _ExtensionModules)
del _finders

class _Fallbacks:
    """After the path finder: `pytest` and `tabulate` that nothing on
    sys.path provides are tilebook's small stand-ins (their docstrings say
    what they cover)."""

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        source = _tb.fallback_source(name)
        if source is None:
            return None
        import importlib.util

        return importlib.util.spec_from_loader(name, cls, origin="<tilebook's %s>" % name)

    @staticmethod
    def create_module(spec):
        return None

    @staticmethod
    def exec_module(module):
        source = _tb.fallback_source(module.__name__)
        exec(compile(source, "<tilebook's %s>" % module.__name__, "exec"), module.__dict__)


sys.meta_path.append(_Fallbacks)
