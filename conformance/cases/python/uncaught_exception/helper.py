def parse(s):
    return int(s)
