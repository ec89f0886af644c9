# A host-language check of tilebook's Python VM (compared with python3).
from contextlib import suppress, ExitStack, contextmanager
with suppress(ZeroDivisionError):
    1 / 0
print("suppressed")
@contextmanager
def res(i):
    print("open", i)
    yield i
    print("close", i)
with ExitStack() as st:
    xs = [st.enter_context(res(i)) for i in range(3)]
    print(xs)
