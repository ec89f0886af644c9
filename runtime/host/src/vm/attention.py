

# ---------------------------------------------------------------- attention's host surface
#
# What tutorial 06's host code and its reference need beyond autograd.py:
# autograd through batched `@`/`torch.matmul`, `permute`, `softmax` and
# in-place indexed assignment (`p[:, :, mask] = -inf` on a tracked tensor),
# `torch.tril`/`triu`, and `F.scaled_dot_product_attention` (forward and
# backward, by composing the tracked operations).


def _matmul_rule_nd(a, b, g, need):
    if len(a.shape) < 2 or len(b.shape) < 2:
        raise NotImplementedError("autograd through @ of 1-D tensors is not supported in tilebook")
    ga = gb = None
    if need[0]:
        ga = _sum_to(_tb.binop("@", g, _tb.getattr(b, "transpose")(-2, -1)), a.shape)
    if need[1]:
        gb = _sum_to(_tb.binop("@", _tb.getattr(a, "transpose")(-2, -1), g), b.shape)
    return ga, gb


Tensor.__matmul__, Tensor.__rmatmul__ = _with_rule("@", _matmul_rule_nd)


def _matmul(input, other, out=None):
    if out is not None:
        # As torch: a product written into `out` is not differentiated.
        if _tracks([input, other]):
            raise RuntimeError("torch.matmul(out=...) does not support automatic differentiation "
                               "for arguments that require grad")
        return _tb.builtin("torch.matmul")(input, other, out=out)
    return input @ other


_matmul._tilebook_doc = "torch.matmul"


def _permute(self, *dims):
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = tuple(dims[0])
    out = _tb.getattr(self, "permute")(*dims)
    if _tracks([self]):
        rank = len(self.shape)
        order = [d % rank for d in dims]
        inverse = [0] * rank
        for i, d in enumerate(order):
            inverse[d] = i
        _record(out, "PermuteBackward0", [self], lambda g: (_tb.getattr(g, "permute")(*inverse),))
    return out


Tensor.permute = _permute


def _softmax_tracked(x, dim, dtype=None):
    src = x if dtype is None else _tb.getattr(x, "to")(dtype)
    out = _tb.getattr(src, "softmax")(dim)
    if _tracks([x]):
        in_dtype = x.dtype
        y = _saved(out)

        def rule(g):
            gx = _tb.getattr(_tb.module("torch"), "_softmax_backward")(g, y, dim)
            if gx is None:
                gy = _tb.binop("*", g, y)
                s = _tb.getattr(gy, "sum")(dim, keepdim=True)
                gx = _tb.binop("-", gy, _tb.binop("*", y, s))
            return (_tb.getattr(gx, "to")(in_dtype),)

        _record(out, "SoftmaxBackward0", [x], rule)
    return out


def _softmax_method(self, dim=None, dtype=None, axis=None):
    dim = axis if dim is None else dim
    if dim is None:
        raise TypeError("softmax() missing required argument 'dim'")
    return _softmax_tracked(self, dim, dtype)


def _softmax_function(input, dim=None, _stacklevel=3, dtype=None, axis=None):
    dim = axis if dim is None else dim
    if dim is None:
        raise TypeError("softmax() missing required argument 'dim'")
    return _softmax_tracked(input, dim, dtype)


_softmax_function._tilebook_doc = "torch.softmax"
Tensor.softmax = _softmax_method


def _setitem(self, index, value):
    tracked = _grad_enabled[0] and (
        self.requires_grad or (isinstance(value, Tensor) and value.requires_grad)
    )
    if not tracked:
        return _tb.setitem(self, index, value)
    if self.requires_grad and self.grad_fn is None:
        raise RuntimeError(
            "a leaf Variable that requires grad is being used in an in-place operation."
        )
    # The tensor's history so far moves to an alias; the tensor itself gets
    # a node whose gradient is zero where the assignment overwrote it.
    before = _detach(self)
    before.requires_grad = self.requires_grad
    before.grad_fn = self.grad_fn
    _tb.setitem(self, index, value)

    def rule(g):
        kept = _tb.getattr(g, "clone")()
        _tb.setitem(kept, index, 0)
        gv = None
        if isinstance(value, Tensor) and value.requires_grad:
            gv = _sum_to(_tb.getitem(g, index), value.shape)
        return (kept, gv)

    self.requires_grad = True
    self.grad_fn = _Node("CopySlices", [before, value], rule)


Tensor.__setitem__ = _setitem


def _triangle(lower):
    name = "tril" if lower else "triu"

    def tri(input, diagonal=0, out=None):
        if out is not None:
            raise NotImplementedError("out= is not supported in tilebook")
        native = _tb.getattr(_tb.module("torch"), name)
        out = native(input, diagonal)
        if _tracks([input]):
            _record(out, name.capitalize() + "Backward0", [input], lambda g: (native(g, diagonal),))
        return out

    tri.__name__ = name
    tri._tilebook_doc = "torch." + name
    return tri


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """F.scaled_dot_product_attention: softmax(q kᵀ · scale + mask) v, computed
    in fp32 for fp16/bf16 inputs and returned in the query's dtype, with its backward (through
    the tracked operations); untracked, unmasked calls on a GPU run one fused kernel."""
    import math

    torch = _torch()
    if is_causal and attn_mask is not None:
        raise RuntimeError("scaled_dot_product_attention: is_causal and attn_mask cannot both be set")
    if enable_gqa:
        raise NotImplementedError("scaled_dot_product_attention(enable_gqa=True) is not supported in tilebook")
    L, S, E = query.shape[-2], key.shape[-2], query.shape[-1]
    if key.shape[-1] != E:
        raise RuntimeError("scaled_dot_product_attention: query and key head dims differ (%d and %d)"
                           % (E, key.shape[-1]))
    factor = 1.0 / math.sqrt(E) if scale is None else scale
    if attn_mask is None and dropout_p == 0.0 and not _tracks([query, key, value]):
        # On a GPU: one fused kernel, the scores never materialised.
        fused = _tb.builtin("torch._attention")(query, key, value, is_causal, factor)
        if fused is not None:
            return fused
    half = str(query.dtype) in ("torch.float16", "torch.bfloat16")
    wide = (lambda t: t.float()) if half else (lambda t: t)
    scores = (wide(query) @ wide(key).transpose(-2, -1)) * factor
    bias = None
    if is_causal:
        bias = torch.zeros((L, S), device=query.device)
        with no_grad():
            bias[_triangle(False)(torch.ones((L, S), device=query.device), 1) != 0] = float("-inf")
    elif attn_mask is not None:
        if str(attn_mask.dtype) == "torch.bool":
            bias = torch.zeros(tuple(attn_mask.shape), device=query.device)
            with no_grad():
                bias[attn_mask == 0] = float("-inf")
        else:
            bias = wide(attn_mask)
    if bias is not None:
        scores = scores + _tb.getattr(bias, "to")(scores.dtype)
    weights = scores.softmax(-1)
    if dropout_p > 0.0:
        keep = _tb.cmp(">=", torch.rand(tuple(weights.shape), device=query.device), dropout_p)
        weights = weights * (_tb.getattr(keep, "to")(weights.dtype) / (1.0 - dropout_p))
    return (weights @ wide(value)).to(query.dtype)


_EXTRA["torch"]["matmul"] = _matmul
_EXTRA["torch"]["softmax"] = _softmax_function
_EXTRA["torch"]["tril"] = _triangle(True)
_EXTRA["torch"]["triu"] = _triangle(False)
_EXTRA.setdefault("torch.nn.functional", {})["softmax"] = _softmax_function
_EXTRA["torch.nn.functional"]["scaled_dot_product_attention"] = scaled_dot_product_attention

# `torch.version`: which accelerator build torch is. tilebook is neither a
# ROCm nor a CUDA build of torch (it drives the CUDA driver itself), so both
# are None; `torch.version.tilebook` says what it is.
_torch_version = type(sys)("torch.version")
_torch_version.hip = None
_torch_version.cuda = None
_torch_version.tilebook = "tilebook"
sys.modules["torch.version"] = _torch_version
_EXTRA["torch"]["version"] = _torch_version
