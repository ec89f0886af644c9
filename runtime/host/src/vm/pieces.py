

# ---------------------------------------------------------------- splitting and repeating
#
# `split`, `chunk` and `repeat` as torch defines them, composed from slicing
# (views, as torch's are), `cat` and `expand`; the comparison functions
# (`torch.eq` ...) from the operators.


def _dim_of(t, dim):
    n = len(t.shape)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim % n


def _split(self, split_size_or_sections, dim=0):
    """Views of `input` along `dim`: pieces of `split_size` (the last shorter), or of the given sizes."""
    d = _dim_of(self, dim)
    n = self.shape[d]
    if isinstance(split_size_or_sections, int):
        size = split_size_or_sections
        if size < 0 or (size == 0 and n != 0):
            raise RuntimeError(f"split expects split_size be non-negative, but got split_size={size}")
        sizes = [size] * (n // size) + ([n % size] if n % size else []) if size else [0]
    else:
        sizes = [int(s) for s in split_size_or_sections]
        if sum(sizes) != n or any(s < 0 for s in sizes):
            raise RuntimeError(
                f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at "
                f"dimension {dim}), but got split_sizes={sizes}")
    pieces, start = [], 0
    for s in sizes:
        pieces.append(self[(slice(None),) * d + (slice(start, start + s),)])
        start += s
    return tuple(pieces)


def _chunk(self, chunks, dim=0):
    """At most `chunks` views of `input` along `dim`, of equal size but the last."""
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0, got: " + str(chunks))
    n = self.shape[_dim_of(self, dim)]
    return _split(self, max(1, -(-n // chunks)), dim)


def _repeat(self, *sizes):
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    shape = list(self.shape)
    if len(sizes) < len(shape):
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of "
                           "dimensions of tensor")
    shape = [1] * (len(sizes) - len(shape)) + shape
    spread, wide, out = [], [], []
    for r, s in zip(sizes, shape):
        if r < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {r}: {list(sizes)}")
        spread += [1, s]
        wide += [r, s]
        out.append(r * s)
    return self.reshape(spread).expand(*wide).reshape(out)


Tensor.split = _split
Tensor.chunk = _chunk
Tensor.repeat = _repeat
_split._tilebook_doc = "torch.split"
_chunk._tilebook_doc = "torch.chunk"
_EXTRA["torch"]["split"] = _split
_EXTRA["torch"]["chunk"] = _chunk


def _comparison(name, op, sym):
    def compare(input, other, out=None):
        if out is not None:
            raise NotImplementedError("out= is not supported in tilebook")
        return op(input, other)

    compare.__name__ = name
    compare.__doc__ = f"`input {sym} other` elementwise, as a bool tensor."
    compare._tilebook_doc = "torch." + name
    return compare


def _comparisons():
    import operator as o
    return (("eq", o.eq, "=="), ("ne", o.ne, "!="), ("lt", o.lt, "<"), ("le", o.le, "<="),
            ("gt", o.gt, ">"), ("ge", o.ge, ">="))


for _name, _op, _sym in _comparisons():
    _EXTRA["torch"][_name] = _comparison(_name, _op, _sym)
