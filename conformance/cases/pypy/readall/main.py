# Reads all of stdin at once and describes it: bytes, lines, sha256.
import hashlib
import sys

b = sys.stdin.buffer.read()
print("bytes=%d lines=%d sha256=%s" % (len(b), b.count(b"\n"), hashlib.sha256(b).hexdigest()))
