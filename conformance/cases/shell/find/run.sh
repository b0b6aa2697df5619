# find: by name, type, size, depth, -newer, -exec, -delete.
mkdir -p t/a/b t/c
for f in t/x.txt t/a/y.txt t/a/b/z.log t/c/w.txt; do echo "$f" > "$f"; done
head -c 5000 /dev/zero > t/c/big.bin
find t -type f -name '*.txt' | sort
find t -type d | sort
find t -size +4k
find t -maxdepth 1 | sort
touch -d '2001-01-01' t/x.txt
find t -type f ! -newer t/x.txt
find t -name '*.log' -exec sh -c 'echo "log: $1 $(wc -c < "$1")"' _ {} \;
find t -name '*.bin' -delete
find t -type f | wc -l
