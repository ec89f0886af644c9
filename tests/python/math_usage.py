# A host-language check of tilebook's Python VM (compared with python3).
import math
print(math.sqrt(16), math.floor(-2.5), math.ceil(2.1), math.gcd(12, 18), math.isclose(0.1 + 0.2, 0.3))
print(round(math.pi, 5), math.log2(1024), math.inf > 1e308, math.isnan(math.nan), math.comb(5, 2))
