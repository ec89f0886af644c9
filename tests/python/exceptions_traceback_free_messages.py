# A host-language check of tilebook's Python VM (compared with python3).
try:
    int("abc")
except ValueError as e:
    print(e)
try:
    None.attr
except AttributeError as e:
    print("AttributeError")
