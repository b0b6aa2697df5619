long dot(const long *a, const long *b, int n) {
    long s = 0;
    for (int i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}
