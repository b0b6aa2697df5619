import importlib
import os
import sys

import pkg
from pkg import mathx

print(__name__, pkg.VERSION, mathx.tri(100))
print(sorted(os.listdir("pkg/__pycache__"))[0].startswith("__init__.cpython-311"))
with open("pkg/gen.py", "w") as f:
    f.write("VALUE = 1\n")
importlib.invalidate_caches()
gen = importlib.import_module("pkg.gen")
print(gen.VALUE)
code = compile("x = 6 * 7", "<dynamic>", "exec")
ns = {}
exec(code, ns)
print(ns["x"], sys.path[0] == os.getcwd(), sys.dont_write_bytecode)
