# Python ints: factorial, powers, modular exponentiation, Fibonacci,
# integer square roots, fractions.
import math
import sys
from fractions import Fraction

# PyPy 7.3.11, like CPython 3.11, limits int/str conversions to 4300
# digits; judges lift the limit.
sys.set_int_max_str_digits(0)

f = math.factorial(3000)
fs = str(f)
print("3000! has %d digits, digit sum %d, starts %s" % (len(fs), sum(map(int, fs)), fs[:30]))
p = 2**20000
print("2^20000 mod 1e9+7 = %d, bits %d" % (p % (10**9 + 7), p.bit_length()))
m = 2**127 - 1
print("3^(m-1) mod m =", pow(3, m - 1, m), "inverse", pow(3, -1, m) * 3 % m)
a, b = 0, 1
for _ in range(10000):
    a, b = b, a + b
s = str(a)
print("fib(10000) ends %s, %d digits" % (s[-40:], len(s)))
print("isqrt(2*10^200) =", math.isqrt(2 * 10**200))
print(sum(Fraction(1, k) for k in range(1, 30)))
print(math.gcd(f, p + 1), (-7) // 2, (-7) % 3, divmod(10**30 + 7, 97))
