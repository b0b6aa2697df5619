#!/bin/sh
# pipeline.sh: a shell build-and-check script: pipelines, redirections,
# command substitution, loops, traps, background jobs and the usual
# coreutils, sed, awk, find, xargs, tar and gzip.
set -eu
umask 022
trap 'rm -rf "$tmp"' EXIT
tmp=$(mktemp -d)
mkdir -p out
printf '%s\n' 5 3 9 1 3 7 > out/in.txt
sort -n out/in.txt | uniq | tr '\n' ' ' > out/sorted.txt
echo >> out/sorted.txt
n=$(wc -l < out/in.txt)
sum=0
for x in $(cat out/in.txt); do sum=$((sum + x)); done
grep -c 3 out/in.txt > out/count.txt || true
sed -e 's/ /,/g' out/sorted.txt | cut -d, -f1-3 > out/cut.txt
awk '{ s += $1 } END { print s }' out/in.txt > out/awk.txt
head -n 2 out/in.txt | tail -n 1 > out/second.txt
cp out/in.txt out/copy.txt
mv out/copy.txt out/moved.txt
ln -s moved.txt out/link.txt
ln out/moved.txt out/hard.txt
readlink out/link.txt > /dev/null
realpath out/link.txt > /dev/null
ls -l out > out/ls.txt
find out -name '*.txt' | sort | xargs cat | md5sum > out/md5.txt
tee out/tee.txt < out/in.txt > /dev/null
(cd out && tar cf "$tmp/out.tar" in.txt sorted.txt && gzip -9 "$tmp/out.tar")
gzip -dc "$tmp/out.tar.gz" | tar tf - | wc -l > /dev/null
cat <<END > "$tmp/here.txt"
sum=$sum
END
date +%Y > /dev/null
env | grep -q PATH
command -v awk > /dev/null
test -s out/awk.txt && [ "$(cat out/awk.txt)" = "$sum" ]
diff out/in.txt out/tee.txt
basename "$PWD" > /dev/null; dirname "$PWD" > /dev/null
expr 2 + 2 > /dev/null
sleep 0.01 &
wait
kill -0 $$
touch out/stamp; chmod 644 out/stamp; stat -c %s out/stamp > /dev/null
du -s out > /dev/null; df . > /dev/null || true
rm -r out
echo "lines $n sum $sum"
