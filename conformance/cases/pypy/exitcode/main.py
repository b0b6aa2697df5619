# Exit codes: atexit handlers run, then sys.exit(42); output is flushed.
import atexit
import sys

atexit.register(lambda: print("atexit handler"))
print("exiting with 42")
print("bye", file=sys.stderr)
sys.exit(42)
