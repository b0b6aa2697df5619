import helper

print("started")
try:
    helper.parse("12x")
except ValueError as e:
    raise RuntimeError("could not parse the input") from e
