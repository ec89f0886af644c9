# A host-language check of tilebook's Python VM (compared with python3).
try:
    try:
        {}["k"]
    except KeyError as e:
        raise ValueError("wrapped") from e
except ValueError as e:
    print(e, type(e.__cause__).__name__, e.__cause__)
