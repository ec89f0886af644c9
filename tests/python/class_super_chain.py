# A host-language check of tilebook's Python VM (compared with python3).
class A:
    def __init__(self):
        self.log = ["A"]
class B(A):
    def __init__(self):
        super().__init__()
        self.log.append("B")
class C(B):
    def __init__(self):
        super().__init__()
        self.log.append("C")
print(C().log)
