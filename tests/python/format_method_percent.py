# A host-language check of tilebook's Python VM (compared with python3).
print("{} {:>4} {name}".format(1, 2, name="n"), "%5.2f|%-4d|%s" % (3.14159, 7, "s"))
print("{0[1]} {1.real}".format([5, 6], 3 + 4j))
