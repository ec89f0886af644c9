# A host-language check of tilebook's Python VM (compared with python3).
b = "héllo".encode()
print(len(b), b[:2], b.decode(), (0xF0 >> 4) | 1, 5 & 3, 5 ^ 3, ~5, (1 << 40).bit_length())
