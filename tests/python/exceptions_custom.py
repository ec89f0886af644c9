# A host-language check of tilebook's Python VM (compared with python3).
class AppError(Exception):
    def __init__(self, code, msg):
        super().__init__(msg)
        self.code = code
try:
    raise AppError(42, "bad thing")
except AppError as e:
    print(e.code, e, type(e).__name__, isinstance(e, Exception))
