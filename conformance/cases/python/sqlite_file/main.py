import os
import sqlite3

db = sqlite3.connect("test.db")
db.execute("CREATE TABLE kv (k TEXT PRIMARY KEY, v INTEGER)")
for i in range(50):
    db.execute("INSERT INTO kv VALUES (?, ?)", ("key%d" % i, i * i))
    if i % 10 == 9:
        db.commit()
db.close()

db = sqlite3.connect("test.db")
print(db.execute("SELECT count(*), sum(v) FROM kv").fetchone())
print(db.execute("PRAGMA journal_mode=WAL").fetchone())
with db:
    db.execute("UPDATE kv SET v = v + 1")
print(os.path.exists("test.db-wal"))
db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
db.execute("PRAGMA journal_mode=DELETE")
db.execute("VACUUM")
print(db.execute("SELECT sum(v) FROM kv").fetchone())
print(db.execute("PRAGMA integrity_check").fetchone())
db.close()
print(sorted(f for f in os.listdir(".") if f.startswith("test.db")))
os.remove("test.db")
