big = bytearray(100 * 1024 * 1024)
big[-1] = 7
print(len(big), big[-1])
del big
xs = list(range(5 * 10 ** 6))
print(sum(xs))
del xs
d = {i: str(i) for i in range(10 ** 6)}
print(len(d), d[999999])
del d
blocks = [bytes(1 << 20) for _ in range(50)]
print(sum(map(len, blocks)))
