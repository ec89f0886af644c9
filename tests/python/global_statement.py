# A host-language check of tilebook's Python VM (compared with python3).
count = 0
def bump():
    global count
    count += 1
bump(); bump()
print(count)
