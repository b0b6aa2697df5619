for i in range(200000):
    print(i, i * i % 1000003)
