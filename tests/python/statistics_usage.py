# A host-language check of tilebook's Python VM (compared with python3).
import statistics as st
d = [2, 4, 4, 4, 5, 5, 7, 9]
print(st.mean(d), st.median(d), st.mode(d), round(st.pstdev(d), 6), round(st.stdev(d), 6))
