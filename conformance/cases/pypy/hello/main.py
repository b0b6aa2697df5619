# Hello world, with UTF-8 text, and a line on stderr.
import sys

print("Hello, World!")
print("héllo wörld ✓ 日本")
print("to stderr", file=sys.stderr)
