"""tilebook's stand-in for `pytest`, used when pytest is not installed (an
installed pytest on sys.path is imported instead).

Programs that define their tests next to their code (Triton's tutorials do)
import pytest for its decorators. This module gives them: `mark.parametrize`
and any other `mark.<name>` (recorded on the function as `pytestmark`),
`param`, `fixture`, `skip`, `fail`, `xfail`, `importorskip`, `raises` and
`approx`. Collecting and running test files is not part of it: call a test
function yourself, e.g. `test_op(1, 2, 128, 64, False, False, "fwd", "triton-fp16")`.
`parameters(fn)` lists the argument tuples of a function's `parametrize`
marks (their product, in pytest's order)."""

import math as _math
import re as _re

__all__ = ["mark", "param", "fixture", "skip", "fail", "xfail", "importorskip",
           "raises", "approx", "parameters"]


class _Outcome(BaseException):
    def __init__(self, msg=""):
        super().__init__(msg)
        self.msg = msg


class Skipped(_Outcome):
    pass


class Failed(_Outcome):
    pass


class XFailed(_Outcome):
    pass


def skip(reason="", *, allow_module_level=False, msg=None):
    raise Skipped(msg if msg is not None else reason)


def fail(reason="", pytrace=True, msg=None):
    raise Failed(msg if msg is not None else reason)


def xfail(reason=""):
    raise XFailed(reason)


skip.Exception = Skipped
fail.Exception = Failed
xfail.Exception = XFailed


def importorskip(modname, minversion=None, reason=None):
    try:
        module = __import__(modname)
    except ImportError:
        raise Skipped(reason or "could not import %r" % modname)
    for part in modname.split(".")[1:]:
        module = getattr(module, part)
    return module


class Mark:
    def __init__(self, name, args, kwargs):
        self.name, self.args, self.kwargs = name, args, kwargs

    def __repr__(self):
        return "Mark(name=%r, args=%r, kwargs=%r)" % (self.name, self.args, self.kwargs)


class MarkDecorator:
    def __init__(self, mark):
        self.mark = mark

    @property
    def name(self):
        return self.mark.name

    def __call__(self, *args, **kwargs):
        if not kwargs and len(args) == 1 and callable(args[0]):
            fn = args[0]
            marks = list(getattr(fn, "pytestmark", []))
            fn.pytestmark = marks + [self.mark]
            return fn
        return MarkDecorator(Mark(self.mark.name, self.mark.args + args,
                                  dict(self.mark.kwargs, **kwargs)))


class _MarkGenerator:
    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return MarkDecorator(Mark(name, (), {}))


mark = _MarkGenerator()


class ParameterSet:
    def __init__(self, values, marks, id):
        self.values, self.marks, self.id = values, marks, id


def param(*values, marks=(), id=None):
    return ParameterSet(values, marks, id)


def parameters(fn):
    """The argument tuples of `fn`'s parametrize marks, as pytest runs them."""
    grids = []
    for m in getattr(fn, "pytestmark", []):
        if m.name != "parametrize":
            continue
        names = m.args[0] if m.args else m.kwargs["argnames"]
        values = m.args[1] if len(m.args) > 1 else m.kwargs["argvalues"]
        if isinstance(names, str):
            names = [n.strip() for n in names.split(",") if n.strip()]
        rows = []
        for v in values:
            if isinstance(v, ParameterSet):
                v = v.values
            rows.append(tuple(v) if len(names) > 1 else (v,))
        grids.append((list(names), rows))
    combos = [({})]
    for names, rows in grids:
        combos = [dict(c, **dict(zip(names, r))) for r in rows for c in combos]
    return combos


def fixture(fn=None, *, scope="function", params=None, autouse=False, ids=None, name=None):
    if fn is not None and callable(fn):
        return fn
    return lambda f: f


class _Raises:
    def __init__(self, expected, match):
        self.expected, self.match, self.value = expected, match, None

    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        if kind is None:
            raise Failed("DID NOT RAISE %s" % getattr(self.expected, "__name__", self.expected))
        if not issubclass(kind, self.expected):
            return False
        if self.match is not None and not _re.search(self.match, str(value)):
            raise Failed("Regex pattern %r did not match %r" % (self.match, str(value)))
        self.value, self.type = value, kind
        return True


def raises(expected_exception, *args, match=None, **kwargs):
    ctx = _Raises(expected_exception, match)
    if not args:
        return ctx
    with ctx:
        args[0](*args[1:], **kwargs)
    return ctx


class _Approx:
    def __init__(self, expected, rel, abs_):
        self.expected, self.rel, self.abs = expected, rel, abs_

    def _close(self, actual, expected):
        rel = 1e-6 if self.rel is None else self.rel
        tol = max(rel * _math.fabs(expected), 1e-12 if self.abs is None else self.abs)
        return actual == expected or _math.fabs(actual - expected) <= tol

    def __eq__(self, actual):
        e = self.expected
        if isinstance(e, (list, tuple)):
            return len(actual) == len(e) and all(self._close(a, b) for a, b in zip(actual, e))
        return self._close(actual, e)

    def __repr__(self):
        return "approx(%r)" % (self.expected,)


def approx(expected, rel=None, abs=None, nan_ok=False):
    return _Approx(expected, rel, abs)
