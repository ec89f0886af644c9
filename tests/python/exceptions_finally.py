# A host-language check of tilebook's Python VM (compared with python3).
def f(x):
    try:
        return 10 / x
    except ZeroDivisionError:
        return "div0"
    finally:
        print("finally", x)
print(f(2), f(0))
