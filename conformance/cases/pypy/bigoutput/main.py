# Large output: 70000 lines, one print each (buffered to a pipe or file).
for i in range(70000):
    print(i, i * i % 1000003)
