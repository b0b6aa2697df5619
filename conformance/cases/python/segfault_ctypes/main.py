import ctypes
import sys

print("about to crash")
sys.stdout.flush()
ctypes.string_at(0)
print("never")
