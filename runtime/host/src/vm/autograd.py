
# ---------------------------------------------------------------- autograd
#
# Reverse-mode differentiation on the host, as torch users write it: a
# tensor with `requires_grad` records, in each operation below that uses it,
# a node (its `grad_fn`) that turns the gradient of the result into
# gradients of the operands; `backward()` walks the nodes in reverse
# topological order and accumulates `.grad` on the leaves.
# `torch.autograd.Function` subclasses (what Triton's tutorials wrap their
# kernels in) are nodes whose backward is the user's.
#
# An operation without a rule here raises when an operand requires a
# gradient, so a missing rule is an error, never a silently absent gradient.

_grad_enabled = [True]


class _GradMode:
    def __init__(self, enabled):
        self.enabled = bool(enabled)
        self.prev = _grad_enabled[0]

    def __enter__(self):
        self.prev = _grad_enabled[0]
        _grad_enabled[0] = self.enabled
        return self

    def __exit__(self, *exc):
        _grad_enabled[0] = self.prev
        return False

    def __call__(self, fn):
        mode = self.enabled

        def wrapped(*args, **kwargs):
            with _GradMode(mode):
                return fn(*args, **kwargs)

        wrapped.__name__ = getattr(fn, "__name__", "wrapped")
        wrapped.__doc__ = getattr(fn, "__doc__", None)
        return wrapped


def no_grad():
    """Context manager (or decorator) in which operations record nothing."""
    return _GradMode(False)


def enable_grad():
    """Context manager (or decorator) in which operations record again."""
    return _GradMode(True)


class set_grad_enabled(_GradMode):
    """Turn recording on or off now; as a context manager, until the block ends."""

    def __init__(self, mode):
        super().__init__(mode)
        _grad_enabled[0] = self.enabled

    def __enter__(self):
        return self


def is_grad_enabled():
    return _grad_enabled[0]


class _Node:
    """One recorded operation (a tensor's `grad_fn`)."""

    def __init__(self, name, inputs, backward):
        self._name = name
        self.inputs = list(inputs)
        self.backward_fn = backward
        self.freed = False

    def name(self):
        return self._name

    @property
    def next_functions(self):
        return tuple(
            (t.grad_fn, 0) if isinstance(t, Tensor) else (None, 0) for t in self.inputs
        )

    def __repr__(self):
        return "<%s object>" % self._name


def _tracks(values):
    return _grad_enabled[0] and any(
        isinstance(v, Tensor) and v.requires_grad for v in values
    )


def _record(out, name, inputs, backward):
    """Attach a node to `out` when any of `inputs` requires a gradient."""
    if _tracks(inputs):
        out.requires_grad = True
        out.grad_fn = _Node(name, inputs, backward)
    return out


def _untracked(name, values):
    if _tracks(values):
        raise NotImplementedError(
            "autograd through %s is not supported in tilebook yet; compute it under "
            "torch.no_grad(), or wrap it in a torch.autograd.Function with its own backward"
            % name
        )


def _sum_to(grad, shape):
    """Sum a broadcast gradient back to an operand's shape."""
    shape = tuple(shape)
    g = grad
    while len(g.shape) > len(shape):
        g = g.sum(0)
    for i, n in enumerate(shape):
        if n == 1 and g.shape[i] != 1:
            g = g.sum(i, keepdim=True)
    return g


def _backward(root, gradient=None, retain_graph=None):
    if root.grad_fn is None:
        if root.requires_grad:
            _accumulate(root, gradient if gradient is not None else _ones_like(root))
            return
        raise RuntimeError(
            "element 0 of tensors does not require grad and does not have a grad_fn"
        )
    if gradient is None:
        if root.numel() != 1:
            raise RuntimeError("grad can be implicitly created only for scalar outputs")
        gradient = _ones_like(root)
    # Reverse topological order of the nodes reachable from the root.
    order, seen = [], set()
    stack = [(root.grad_fn, False)]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        for t in node.inputs:
            if isinstance(t, Tensor) and t.grad_fn is not None and id(t.grad_fn) not in seen:
                stack.append((t.grad_fn, False))
    grads = {id(root.grad_fn): gradient}
    for node in reversed(order):
        g = grads.pop(id(node), None)
        if g is None:
            continue
        if node.freed:
            raise RuntimeError(
                "Trying to backward through the graph a second time; pass "
                "retain_graph=True to the first backward()"
            )
        with no_grad():
            parts = node.backward_fn(g)
        if not isinstance(parts, tuple):
            parts = (parts,)
        inputs = node.inputs
        if not retain_graph:
            # As torch frees a node's saved tensors once its backward ran: a
            # large graph's memory goes back as the walk proceeds.
            node.freed = True
            node.backward_fn = None
            node.inputs = []
        for t, part in zip(inputs, parts):
            if part is None or not isinstance(t, Tensor) or not t.requires_grad:
                continue
            if t.grad_fn is None:
                _accumulate(t, part)
            else:
                key = id(t.grad_fn)
                grads[key] = part if key not in grads else grads[key] + part
        del inputs, parts, g


def _ones_like(t):
    return _tb.getattr(_torch(), "ones_like")(t)


def _torch():
    return sys.modules["torch"]


def _accumulate(leaf, g):
    if tuple(g.shape) != tuple(leaf.shape):
        g = _sum_to(g, leaf.shape)
    if g.dtype != leaf.dtype:
        g = _tb.getattr(g, "to")(leaf.dtype)
    leaf.grad = g if leaf.grad is None else leaf.grad + g


class FunctionCtx:
    """The `ctx` of a `torch.autograd.Function`: what forward leaves for backward."""

    def __init__(self):
        self.saved_tensors = ()
        self.needs_input_grad = ()
        self.non_differentiable = ()

    def save_for_backward(self, *tensors):
        self.saved_tensors = tuple(tensors)

    def mark_non_differentiable(self, *tensors):
        self.non_differentiable = tuple(tensors)

    def mark_dirty(self, *tensors):
        pass

    def set_materialize_grads(self, value):
        pass


class Function:
    """Base class of custom differentiable operations: subclasses define
    `forward(ctx, *args)` and `backward(ctx, *grads)` as static methods and
    are called through `apply`."""

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = FunctionCtx()
        ctx.needs_input_grad = tuple(
            isinstance(a, Tensor) and a.requires_grad for a in args
        )
        with no_grad():
            out = cls.forward(ctx, *args, **kwargs)
        if not _tracks(args):
            return out
        outs = out if isinstance(out, tuple) else (out,)
        # Outputs the forward saved are kept as aliases (see `_saved`).
        ctx.saved_tensors = tuple(
            _saved(t) if isinstance(t, Tensor) and any(t is o for o in outs) else t
            for t in ctx.saved_tensors
        )

        def backward(g):
            got = cls.backward(ctx, g)
            return got if isinstance(got, tuple) else (got,)

        name = cls.__name__ + "Backward"
        first = outs[0]
        if isinstance(first, Tensor):
            _record(first, name, args, backward)
        return out


class _AutogradModule:
    pass


autograd = type(sys)("torch.autograd")
autograd.Function = Function
autograd.FunctionCtx = FunctionCtx
autograd.no_grad = no_grad
autograd.enable_grad = enable_grad
autograd.set_grad_enabled = set_grad_enabled
autograd.function = type(sys)("torch.autograd.function")
autograd.function.Function = Function
autograd.function.FunctionCtx = FunctionCtx
sys.modules["torch.autograd"] = autograd
sys.modules["torch.autograd.function"] = autograd.function


# Tensor's autograd surface. Class attributes give the defaults; setting one
# on a tensor stores it in the tensor's own dict.
Tensor.requires_grad = False
Tensor.grad = None
Tensor.grad_fn = None
Tensor.is_leaf = property(lambda self: self.grad_fn is None)


def _requires_grad_(self, requires_grad=True):
    if self.grad_fn is not None and not requires_grad:
        raise RuntimeError("you can only change requires_grad flags of leaf variables")
    self.requires_grad = bool(requires_grad)
    return self


def _detach(self):
    return _tb.getattr(self, "view")(tuple(self.shape))


def _backward_method(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    if create_graph:
        raise NotImplementedError("backward(create_graph=True) is not supported in tilebook")
    _backward(self, gradient, retain_graph)


def _retain_grad(self):
    pass


Tensor.requires_grad_ = _requires_grad_
Tensor.detach = _detach
# `x.data`: the same storage, outside autograd (read-only here: assigning to
# it is an AttributeError rather than a silent no-op).
Tensor.data = property(_detach)
Tensor.backward = _backward_method
Tensor.retain_grad = _retain_grad


def _cast_method(name):
    def cast(self, *args, **kwargs):
        out = _tb.getattr(self, name)(*args, **kwargs)
        # As torch: a conversion to what the tensor already is returns the
        # tensor itself (so a leaf stays the leaf that collects `.grad`).
        if (name != "clone" and not kwargs.get("copy", False) and isinstance(out, Tensor)
                and out.dtype == self.dtype and str(out.device) == str(self.device)
                and tuple(out.shape) == tuple(self.shape)
                and (name != "contiguous" or self.is_contiguous())):
            return self
        if _tracks([self]) and isinstance(out, Tensor):
            src = self.dtype
            _record(out, "ToCopyBackward0", [self], lambda g: (_tb.getattr(g, "to")(src),))
        return out

    cast.__name__ = name
    return cast


for _name in ("to", "float", "half", "bfloat16", "double", "contiguous", "clone"):
    setattr(Tensor, _name, _cast_method(_name))


def _wants(x):
    return isinstance(x, Tensor) and x.requires_grad


def _with_rule(symbol, rule):
    """A binary operator that records `rule(a, b, g, need) -> (ga, gb)`;
    `need` says which of the two want a gradient (the other's is None, not
    computed: a scalar factor's would cost a full-size product and a sum)."""

    def forward(self, other):
        out = _tb.binop(symbol, self, other)
        if _tracks([self, other]):
            a, b = self, other
            need = (_wants(a), _wants(b))
            _record(out, "Backward(%s)" % symbol, [a, b], lambda g: rule(a, b, g, need))
        return out

    def reverse(self, other):
        out = _tb.binop(symbol, other, self)
        if _tracks([self, other]):
            a, b = other, self
            need = (_wants(a), _wants(b))
            _record(out, "Backward(%s)" % symbol, [a, b], lambda g: rule(a, b, g, need))
        return out

    return forward, reverse


def _shape_of(x):
    return x.shape if isinstance(x, Tensor) else ()


def _add_rule(a, b, g, need):
    return (_sum_to(g, _shape_of(a)) if need[0] else None,
            _sum_to(g, _shape_of(b)) if need[1] else None)


def _sub_rule(a, b, g, need):
    return (_sum_to(g, _shape_of(a)) if need[0] else None,
            _sum_to(-g, _shape_of(b)) if need[1] else None)


def _mul_rule(a, b, g, need):
    return (_sum_to(g * b, _shape_of(a)) if need[0] else None,
            _sum_to(g * a, _shape_of(b)) if need[1] else None)


def _div_rule(a, b, g, need):
    return (_sum_to(g / b, _shape_of(a)) if need[0] else None,
            _sum_to(-g * a / (b * b), _shape_of(b)) if need[1] else None)


def _matmul_rule(a, b, g, need):
    if len(a.shape) != 2 or len(b.shape) != 2:
        raise NotImplementedError("autograd through @ of other than 2-D tensors")
    return (g @ b.t() if need[0] else None, a.t() @ g if need[1] else None)


Tensor.__add__, Tensor.__radd__ = _with_rule("+", _add_rule)
Tensor.__sub__, Tensor.__rsub__ = _with_rule("-", _sub_rule)
Tensor.__mul__, Tensor.__rmul__ = _with_rule("*", _mul_rule)
Tensor.__truediv__, Tensor.__rtruediv__ = _with_rule("/", _div_rule)
Tensor.__matmul__, Tensor.__rmatmul__ = _with_rule("@", _matmul_rule)


def _inplace(name, op, plain):
    """`t += x` and the other augmented assignments: torch writes the result
    into `t` itself (a view's base sees it), keeping `t`'s shape and dtype.
    A tensor on the autograd graph (not a leaf) gets the recorded
    out-of-place result instead, so its gradient stays right."""
    def method(self, other):
        if _grad_enabled[0] and self.requires_grad:
            if self.grad_fn is None:
                raise RuntimeError(
                    "a leaf Variable that requires grad is being used in an in-place operation.")
            return plain(self, other)
        out = _tb.binop(op, self, other)
        if list(out.shape) != list(self.shape):
            raise RuntimeError(
                f"output with shape {list(self.shape)} doesn't match the broadcast shape "
                f"{list(out.shape)}")
        if out.dtype.is_floating_point and not self.dtype.is_floating_point:
            raise RuntimeError(
                f"result type Float can't be cast to the desired output type {self.dtype}")
        self.copy_(out)
        return self
    method.__name__ = name
    return method


def _augmented():
    import operator as o
    return (("__iadd__", "+", o.add), ("__isub__", "-", o.sub), ("__imul__", "*", o.mul),
            ("__itruediv__", "/", o.truediv), ("__ifloordiv__", "//", o.floordiv),
            ("__imod__", "%", o.mod), ("__ipow__", "**", o.pow), ("__iand__", "&", o.and_),
            ("__ior__", "|", o.or_), ("__ixor__", "^", o.xor), ("__ilshift__", "<<", o.lshift),
            ("__irshift__", ">>", o.rshift))


for _name, _op, _plain in _augmented():
    setattr(Tensor, _name, _inplace(_name, _op, _plain))

def _neg(self):
    out = _tb.unop("-", self)
    return _record(out, "NegBackward0", [self], lambda g: (-g,))


Tensor.__neg__ = _neg


def _reduction(name):
    def reduce(self, *args, **kwargs):
        out = _tb.getattr(self, name)(*args, **kwargs)
        if not _tracks([self]):
            return out
        dim = args[0] if args else kwargs.get("dim")
        keepdim = kwargs.get("keepdim", False)
        shape = tuple(self.shape)
        count = 1
        for n in shape:
            count *= n
        if dim is not None:
            dims = dim if isinstance(dim, (tuple, list)) else (dim,)
            count = 1
            for d in dims:
                count *= shape[d]

        def rule(g):
            if dim is not None and not keepdim:
                dims = sorted((d % len(shape)) for d in (dim if isinstance(dim, (tuple, list)) else (dim,)))
                for d in dims:
                    g = g.unsqueeze(d)
            g = g.expand(*shape)
            return (g / count if name == "mean" else g.contiguous(),)

        return _record(out, name.capitalize() + "Backward0", [self], rule)

    reduce.__name__ = name
    return reduce


Tensor.sum = _reduction("sum")
Tensor.mean = _reduction("mean")


def _saved(out):
    """An output kept for a backward rule: an alias without its `grad_fn`.
    The rule lives in the output's node, so capturing the output itself
    would make a cycle (output -> node -> rule -> output) that the VM never
    collects: a graph never walked backward would keep its tensors forever.
    Tensors made under autograd must not hold each other in cycles."""
    return _tb.getattr(out, "view")(tuple(out.shape))


def _exp(self):
    out = _tb.getattr(self, "exp")()
    kept = _saved(out)
    return _record(out, "ExpBackward0", [self], lambda g: (g * kept,))


Tensor.exp = _exp


def _guarded_method(name):
    def method(self, *args, **kwargs):
        _untracked("Tensor.%s" % name, [self] + list(args))
        return _tb.getattr(self, name)(*args, **kwargs)

    method.__name__ = name
    return method


for _name in ("log", "sqrt", "abs", "sigmoid", "relu", "softmax", "max", "min", "var", "std",
              "permute"):
    setattr(Tensor, _name, _guarded_method(_name))


def _shape_method(name):
    """reshape/view/t/transpose: the gradient takes the operand's shape back."""

    def method(self, *args, **kwargs):
        # Without keywords, a plain call: `f(*args, **{})` costs the VM
        # several times more (bench/NOTES.md, session 67).
        f = _tb.getattr(self, name)
        out = f(*args, **kwargs) if kwargs else f(*args)
        if _grad_enabled[0] and self.requires_grad:
            shape = tuple(self.shape)
            if name in ("t", "transpose"):
                back = lambda g: (_tb.getattr(g, name)(*args, **kwargs),)
            else:
                back = lambda g: (_tb.getattr(_tb.getattr(g, "contiguous")(), "reshape")(shape),)
            _record(out, name.capitalize() + "Backward0", [self], back)
        return out

    method.__name__ = name
    return method


for _name in ("reshape", "view", "t", "transpose", "unsqueeze", "squeeze", "flatten"):
    setattr(Tensor, _name, _shape_method(_name))


# The creation functions (`torch.empty(..., requires_grad=True)`) take
# `requires_grad` natively (`natives.rs`, `CREATION`): no wrapper per call.


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """torch.nn.functional.layer_norm over the last dimension, with its backward."""
    shape = tuple(normalized_shape) if isinstance(normalized_shape, (tuple, list)) else (normalized_shape,)
    if len(shape) != 1 or shape[0] != input.shape[-1]:
        raise NotImplementedError(
            "layer_norm over the last dimension only (normalized_shape=(%d,))" % input.shape[-1]
        )
    n = shape[0]
    # On a GPU: one kernel forward and one backward (fp32 statistics).
    fused = _tb.builtin("torch._layer_norm")(input, weight, bias, eps)
    if fused is not None:
        y, mean, rstd = fused

        wants = (weight is not None and _wants(weight)) or (bias is not None and _wants(bias))

        def fused_rule(g):
            with no_grad():
                back = _tb.builtin("torch._layer_norm_backward")(g, input, weight, mean, rstd, wants)
                if back is None:
                    g = _tb.getattr(g, "contiguous")()
                    back = _tb.builtin("torch._layer_norm_backward")(g, input, weight, mean, rstd, wants)
                dx, dw, db = back
                dw = _tb.getattr(dw, "to")(weight.dtype) if dw is not None and weight is not None else None
                db = _tb.getattr(db, "to")(bias.dtype) if db is not None and bias is not None else None
                return (dx, None, dw, db, None)

        return _record(y, "NativeLayerNormBackward0", [input, normalized_shape, weight, bias, eps], fused_rule)
    # fp16/bf16 compute in fp32 as torch does; fp64 stays fp64.
    wide = "double" if str(input.dtype) == "torch.float64" else "float"
    with no_grad():
        x = _tb.getattr(input, wide)()
        mean = _tb.getattr(x, "mean")(-1, keepdim=True)
        centered = _tb.binop("-", x, mean)
        var = _tb.getattr(_tb.binop("*", centered, centered), "mean")(-1, keepdim=True)
        rstd = _tb.getattr(_tb.binop("+", var, eps), "rsqrt")()
        xhat = _tb.binop("*", centered, rstd)
        y = xhat
        if weight is not None:
            y = _tb.binop("*", y, _tb.getattr(weight, wide)())
        if bias is not None:
            y = _tb.binop("+", y, _tb.getattr(bias, wide)())
        y = _tb.getattr(y, "to")(input.dtype)

    def rule(g):
        with no_grad():
            gf = _tb.getattr(g, wide)()
            wg = gf if weight is None else _tb.binop("*", gf, _tb.getattr(weight, wide)())
            m1 = _tb.getattr(wg, "mean")(-1, keepdim=True)
            m2 = _tb.getattr(_tb.binop("*", wg, xhat), "mean")(-1, keepdim=True)
            dx = _tb.binop("*", _tb.binop("-", _tb.binop("-", wg, m1), _tb.binop("*", xhat, m2)), rstd)
            rows = _tb.getattr(gf, "reshape")(-1, n)
            dw = db = None
            if weight is not None:
                flat = _tb.getattr(xhat, "reshape")(-1, n)
                dw = _tb.getattr(_tb.getattr(_tb.binop("*", rows, flat), "sum")(0), "to")(weight.dtype)
            if bias is not None:
                db = _tb.getattr(_tb.getattr(rows, "sum")(0), "to")(bias.dtype)
            return (_tb.getattr(dx, "to")(input.dtype), None, dw, db, None)

    return _record(y, "NativeLayerNormBackward0", [input, normalized_shape, weight, bias, eps], rule)


_EXTRA["torch"]["autograd"] = autograd
_EXTRA["torch"]["no_grad"] = no_grad
_EXTRA["torch"]["enable_grad"] = enable_grad
_EXTRA["torch"]["set_grad_enabled"] = set_grad_enabled
_EXTRA["torch"]["is_grad_enabled"] = is_grad_enabled
_EXTRA.setdefault("torch.nn.functional", {})["layer_norm"] = layer_norm
del _name


# ---------------------------------------------------------------- torch.testing

_CLOSE_DEFAULTS = {
    "torch.float16": (1e-3, 1e-5),
    "torch.bfloat16": (1.6e-2, 1e-5),
    "torch.float32": (1.3e-6, 1e-5),
    "torch.float64": (1e-7, 1e-7),
}


def assert_close(actual, expected, *, rtol=None, atol=None, equal_nan=False,
                 check_dtype=True, check_device=True, msg=None):
    """torch.testing.assert_close: elementwise |actual - expected| <= atol + rtol * |expected|."""
    torch = _torch()
    if not isinstance(actual, Tensor) or not isinstance(expected, Tensor):
        if isinstance(actual, Tensor) or isinstance(expected, Tensor):
            raise TypeError("assert_close compares two tensors or two numbers")
        actual = torch.tensor(float(actual), dtype=torch.float64)
        expected = torch.tensor(float(expected), dtype=torch.float64)
    if (rtol is None) != (atol is None):
        raise ValueError("Both 'rtol' and 'atol' must be either specified or omitted")
    if tuple(actual.shape) != tuple(expected.shape):
        raise AssertionError(msg or "The values for attribute 'shape' do not match: %s != %s."
                             % (tuple(actual.shape), tuple(expected.shape)))
    if check_dtype and actual.dtype != expected.dtype:
        raise AssertionError(msg or "The values for attribute 'dtype' do not match: %s != %s."
                             % (actual.dtype, expected.dtype))
    if rtol is None:
        rtol, atol = _CLOSE_DEFAULTS.get(str(actual.dtype), (0.0, 0.0))
    # Counted natively (on the GPU for GPU tensors), in fp64.
    count = _tb.getattr(_tb.module("torch"), "_mismatches")(actual, expected, rtol, atol, equal_nan)
    if count == 0:
        return
    if msg is not None:
        raise AssertionError(msg)
    with no_grad():
        a = _tb.getattr(actual, "double")()
        e = _tb.getattr(expected, "double")()
        diff = _tb.getattr(_tb.binop("-", a, e), "abs")()
    total = actual.numel()
    flat = _tb.getattr(diff, "reshape")(-1)
    worst = int(_tb.getattr(_tb.getattr(flat, "argmax")(), "item")())
    rel = _tb.binop("/", diff, _tb.getattr(e, "abs")())
    rel_flat = _tb.getattr(rel, "reshape")(-1)
    worst_rel = int(_tb.getattr(_tb.getattr(rel_flat, "argmax")(), "item")())

    def index(i):
        out = []
        for n in reversed(tuple(actual.shape)):
            out.append(i % n)
            i //= n
        return tuple(reversed(out))

    raise AssertionError(
        "Tensor-likes are not close!\n\n"
        "Mismatched elements: %d / %d (%.1f%%)\n"
        "Greatest absolute difference: %s at index %s (up to %s allowed)\n"
        "Greatest relative difference: %s at index %s (up to %s allowed)"
        % (count, total, 100.0 * count / total,
           _tb.getattr(flat[worst], "item")(),
           index(worst), atol,
           _tb.getattr(rel_flat[worst_rel], "item")(), index(worst_rel), rtol)
    )


testing = type(sys)("torch.testing")
testing.assert_close = assert_close
testing.assert_allclose = assert_close
sys.modules["torch.testing"] = testing
_EXTRA["torch"]["testing"] = testing


def _do_bench_clearing_grads():
    native = _tb.getattr(_tb.module("triton.testing"), "do_bench")

    def do_bench(fn, *args, grad_to_none=None, **kwargs):
        if grad_to_none:
            inner = fn

            def fn():
                for t in grad_to_none:
                    t.grad = None
                return inner()

        return native(fn, *args, **kwargs)

    do_bench._tilebook_doc = "triton.testing.do_bench"
    return do_bench


_EXTRA.setdefault("triton.testing", {})["do_bench"] = _do_bench_clearing_grads()
