import sqlite3

db = sqlite3.connect(":memory:")
db.execute("CREATE TABLE person (id INTEGER PRIMARY KEY, name TEXT, city INTEGER)")
db.execute("CREATE TABLE city (id INTEGER PRIMARY KEY, name TEXT)")
db.executemany("INSERT INTO city VALUES (?, ?)", [(1, "Oslo"), (2, "Lima"), (3, "Pune")])
db.executemany("INSERT INTO person (name, city) VALUES (?, ?)",
               [("p%03d" % i, i % 3 + 1) for i in range(300)])
db.create_function("rev", 1, lambda s: s[::-1])
for row in db.execute("""SELECT c.name, count(*), min(rev(p.name)) FROM person p
                         JOIN city c ON c.id = p.city GROUP BY c.name ORDER BY c.name"""):
    print(row)
try:
    with db:
        db.execute("DELETE FROM person")
        raise RuntimeError("roll back")
except RuntimeError:
    pass
print(db.execute("SELECT count(*) FROM person").fetchone())
db.execute("CREATE INDEX pc ON person(city)")
print(db.execute("EXPLAIN QUERY PLAN SELECT * FROM person WHERE city = 2").fetchall()[0][3])
print(sqlite3.sqlite_version_info >= (3, 0, 0))
