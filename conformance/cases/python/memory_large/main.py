big = bytearray(100 * 1024 * 1024)
big[-1] = 7
print(len(big), big[-1])
del big
xs = list(range(3 * 10 ** 6))
print(sum(xs))
del xs
d = {i: str(i) for i in range(5 * 10 ** 5)}
print(len(d), d[499999])
del d
blocks = [bytes(1 << 20) for _ in range(50)]
print(sum(map(len, blocks)))
