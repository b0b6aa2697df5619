# More coreutils: seq, printf, expr, date in UTC, base64, od, split, cat -A,
# md5sum, yes | head, sleep, basename/dirname, realpath.
printf '%s=%d\n' a 1 b 2
expr 6 \* 7
date -u -d @1700000000 '+%Y-%m-%d %H:%M:%S %A'
printf 'judge' | base64
printf 'judge' | base64 | base64 -d; echo
printf 'ab\tc\n' | od -c | head -n 1
seq 1 10 > ten; split -l 4 ten part_; ls part_* | tr '\n' ' '; echo
printf 'x\ty\r\n' | cat -A
printf 'abc' | md5sum
yes judge | head -n 3
sleep 0.1
basename /a/b/c.txt .txt; dirname /a/b/c.txt
mkdir -p r/s; realpath --relative-to=. r/s/../s
printf '%s\n' 3 1 2 | sort -r | tac
echo "$((0x10 + 010))"
