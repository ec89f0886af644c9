# A host-language check of tilebook's Python VM (compared with python3).
x = 1
def f():
    try:
        print(x)
        x = 2
    except UnboundLocalError as e:
        print("UnboundLocalError")
f()
