# A host-language check of tilebook's Python VM (compared with python3).
class Celsius:
    def __init__(self, t):
        self._t = t
    @property
    def fahrenheit(self):
        return self._t * 9 / 5 + 32
    @fahrenheit.setter
    def fahrenheit(self, f):
        self._t = (f - 32) * 5 / 9
c = Celsius(100)
print(c.fahrenheit)
c.fahrenheit = 32
print(c._t)
