import decimal
import fractions
import math
import sys

sys.set_int_max_str_digits(100000)
big = 3 ** 50000
print(len(str(big)), str(big)[:20], big % 1000000007)
print(math.factorial(1000) % (10 ** 9 + 7), math.comb(100, 50), math.isqrt(10 ** 40 + 12345))
print(pow(2, -1, 1000000007), math.gcd(2 ** 64, 6 ** 30), math.lcm(12, 18, 30))
decimal.getcontext().prec = 60
print(decimal.Decimal(2).sqrt())
print(decimal.Decimal(1) / decimal.Decimal(7))
print(decimal.Decimal("1.10") + decimal.Decimal("2.205"), round(decimal.Decimal("2.675"), 2))
F = fractions.Fraction
s = sum(F(1, k) for k in range(1, 30))
print(s, float(s))
print(F("3.1415926535").limit_denominator(1000), F(1, 3) ** 5)
print(0.1 + 0.2, repr(1 / 3), f"{math.pi:.15f}", f"{1e300 * 1e10}", f"{2.5:.0f} {3.5:.0f}")
print(math.fsum([0.1] * 10), sum([0.1] * 10), float.hex(0.1), (0.1).as_integer_ratio())
print(int("1" * 5000) % 97, hex(2 ** 100), (-7) // 2, (-7) % 3, divmod(-17, 5))
