# A host-language check of tilebook's Python VM (compared with python3).
import functools, operator
print(functools.reduce(operator.mul, range(1, 6)), functools.partial(pow, 2)(10))
@functools.singledispatch
def show(x): return "obj"
@show.register
def _(x: int): return "int"
print(show(1), show("s"))
