# A host-language check of tilebook's Python VM (compared with python3).
import time, random
t0 = time.perf_counter()
random.seed(7)
xs = [random.random() for _ in range(5)]
print(all(0 <= x < 1 for x in xs), time.perf_counter() >= t0, random.Random(1).randint(1, 1))
