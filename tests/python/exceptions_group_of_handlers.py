# A host-language check of tilebook's Python VM (compared with python3).
def kind(v):
    try:
        return [1, 2][v]
    except (IndexError, TypeError) as e:
        return type(e).__name__
print(kind(1), kind(5), kind("a"))
