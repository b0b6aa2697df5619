n = 100000
print(n)
for i in range(n):
    print(i * 7 % 1000, i * 13 % 997)
print("x" * 200000)
print(3)
print("10 20 30")
