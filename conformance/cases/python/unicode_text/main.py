import sys
import textwrap
import unicodedata

raw = sys.stdin.buffer.read()
text = raw.decode("utf-8", errors="surrogateescape")
for line in text.splitlines():
    print(len(line), line.upper(), line.casefold() == line.lower())
print(raw.decode("utf-8", errors="replace").splitlines()[-1])
s = "e\u0301 vs \u00e9"
print(len(s), len(unicodedata.normalize("NFC", s)), unicodedata.normalize("NFD", "é") == "e\u0301")
print([unicodedata.name(c) for c in "A€🙂"], unicodedata.category("٣"), int("٣٤"))
print("ß".upper(), "İ".lower().encode(), "ǅ".istitle(), "Ⅻ".isnumeric())
print("café".encode("latin-1"), "café".encode("utf-16-le").hex(), b"caf\xc3\xa9".decode())
print(textwrap.fill("the quick brown fox jumps over the lazy dog " * 3, width=30))
print(textwrap.shorten("Hello   world, this is long", width=15), textwrap.dedent("  a\n  b").split())
sys.stdout.flush()
sys.stdout.buffer.write("raw bytes: ñ\n".encode())
print(sys.stdout.errors, ascii("ñ🙂"), "%s" % "🙂".encode("unicode_escape"))
