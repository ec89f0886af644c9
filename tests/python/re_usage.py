# A host-language check of tilebook's Python VM (compared with python3).
import re
print(re.findall(r"\d+", "a1b22c333"), re.sub(r"(\w)(\d)", r"\2\1", "a1 b2"))
m = re.match(r"(?P<k>\w+)=(?P<v>\d+)", "size=4096")
print(m.group("k"), int(m.group("v")), re.split(r"[,;]\s*", "a, b;c"))
