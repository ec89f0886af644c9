# A host-language check of tilebook's Python VM (compared with python3).
def define():
    global NEW
    NEW = "made"
define()
print(NEW)
