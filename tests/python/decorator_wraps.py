# A host-language check of tilebook's Python VM (compared with python3).
import functools
def logged(f):
    @functools.wraps(f)
    def w(*a, **k):
        print("call", f.__name__, a, k)
        return f(*a, **k)
    return w
@logged
def area(w, h=1):
    "area doc"
    return w * h
print(area(3, h=4), area.__name__, area.__doc__)
