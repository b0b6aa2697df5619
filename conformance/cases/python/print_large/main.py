for i in range(60000):
    print(i, i * i % 1000003)
