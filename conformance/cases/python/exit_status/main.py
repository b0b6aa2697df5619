import atexit
import sys

atexit.register(lambda: print("atexit ran"))
print("out line")
print("err line", file=sys.stderr)
try:
    sys.exit(5)
except SystemExit as e:
    print("caught", e.code)
sys.stdout.write("partial line without newline")
sys.exit(42)
