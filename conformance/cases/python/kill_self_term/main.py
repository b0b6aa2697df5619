import os
import signal
import sys

print("before")
sys.stdout.flush()
sys.stderr.write("to stderr\n")
os.kill(os.getpid(), signal.SIGTERM)
print("after (never printed)")
