# A host-language check of tilebook's Python VM (compared with python3).
def shout(f):
    def w(*a, **k):
        return f(*a, **k).upper()
    return w
@shout
def greet(name):
    return "hi " + name
print(greet("ann"))
