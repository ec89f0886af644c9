# A host-language check of tilebook's Python VM (compared with python3).
import json
obj = {"name": "k", "sizes": [1, 2.5, None], "ok": True}
s = json.dumps(obj, sort_keys=True)
print(s)
print(json.loads(s) == obj, json.dumps([1, 2], indent=2))
