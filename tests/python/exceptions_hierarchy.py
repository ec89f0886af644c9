# A host-language check of tilebook's Python VM (compared with python3).
for exc in (KeyError("k"), IndexError(1), ZeroDivisionError(), FileNotFoundError()):
    try:
        raise exc
    except LookupError:
        print("lookup", type(exc).__name__)
    except ArithmeticError:
        print("arith", type(exc).__name__)
    except OSError:
        print("os", type(exc).__name__)
