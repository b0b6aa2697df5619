import csv
import io
import json
import re
import sys

rows = list(csv.DictReader(sys.stdin))
total = sum(int(r["qty"]) * float(r["price"]) for r in rows)
print(len(rows), f"{total:.2f}", [r["note"] for r in rows])
out = io.StringIO()
w = csv.writer(out, lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
w.writerows([[r["name"].upper(), r["note"]] for r in rows])
print(out.getvalue(), end="")
doc = {"rows": rows, "total": total, "nested": {"a": [1, 2.5, None, True], "ü": "ñ"}}
s = json.dumps(doc, sort_keys=True)
print(len(s), json.loads(s) == doc)
print(json.dumps(doc["nested"], ensure_ascii=False, indent=1))
with open("doc.json", "w") as f:
    json.dump(doc, f)
with open("doc.json") as f:
    print(json.load(f)["total"] == total)
text = "2024-01-15 error: disk /dev/sda1 at 91%; 2024-02-01 warn: cpu at 77%"
print(re.findall(r"(\d{4})-(\d\d)-(\d\d) (\w+)", text))
print(re.sub(r"(\d+)%", lambda m: str(int(m.group(1)) // 10) + "0%", text))
print(re.split(r"[;:]\s*", text))
pat = re.compile(r"(?P<word>\b\w{5,}\b)", re.I)
print([m.group("word") for m in pat.finditer(text)])
print("héllo wörld ✓ 漢字", len("漢字".encode()), "%-8s|%5.1f|%x" % ("left", 3.14159, 255))
print(sys.stdout.encoding, sys.getdefaultencoding(), sys.getfilesystemencoding())
