"""helper.py: a local module imported by script.py."""


def square(x: int) -> int:
    return x * x
