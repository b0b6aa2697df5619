n = 100000
print(n)
for i in range(n):
    print(i * 7 % 1000, i * 13 % 997)
