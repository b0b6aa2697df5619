# Exceptions: caught ones, then an uncaught one: the traceback on stderr,
# exit status 1.
try:
    int("12x")
except ValueError as e:
    print("caught:", e)
try:
    [1, 2, 3][5]
except IndexError as e:
    print("caught:", e)


def fail(depth):
    if depth == 0:
        raise RuntimeError("boom at the bottom")
    fail(depth - 1)


print("now failing")
fail(3)
