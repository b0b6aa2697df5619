import sys

lines = ["%d %s" % (i, "word" * (i % 5)) for i in range(50000)]
sys.stdout.write("\n".join(lines))
