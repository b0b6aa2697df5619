import os
import random
import secrets

random.seed(20240601)
print([random.randint(1, 100) for _ in range(10)])
print(round(random.random(), 12), round(random.uniform(-5, 5), 12), round(random.gauss(0, 1), 12))
xs = list(range(20))
random.shuffle(xs)
print(xs)
print(random.sample(range(1000), 5), random.choices("abc", weights=[5, 1, 1], k=10))
print(random.getrandbits(64), random.randrange(0, 10 ** 30, 7))
r = random.Random("a string seed")
print(r.random(), r.choice(["x", "y", "z"]))
state = random.getstate()
a = random.random()
random.setstate(state)
print(a == random.random())
print(len(os.urandom(32)), len(secrets.token_hex(16)), 0 <= secrets.randbelow(10) < 10)
sr = random.SystemRandom()
print(0 <= sr.random() < 1)
