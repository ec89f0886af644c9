# Text files read and written without an encoding argument are UTF-8, as in
# python3 under a C or UTF-8 locale (a tutorial's source has non-ASCII text).
import os
import tempfile

path = os.path.join(tempfile.mkdtemp(), "notes.txt")
with open(path, "w") as f:
    f.write("µs, ✅ and ❌, déjà vu\n")
with open(path) as f:
    text = f.read()
print(text.strip(), len(text))
with open(path, "rb") as f:
    print(len(f.read()))
os.remove(path)
