def tri(n):
    return n * (n + 1) // 2
