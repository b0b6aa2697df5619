# awk, sed, sort, uniq, cut, tr, paste, join, comm, head, tail, wc, nl.
tail -n +2 data.csv > rows
awk -F, '{ s[$2] += $3; n[$2]++ } END { for (t in s) printf "%s %.2f\n", t, s[t] / n[t] }' rows | sort
sort -t, -k3,3nr -k1,1 rows | head -n 3
cut -d, -f3 rows | sort -n | uniq -c
sed -n 's/^\([a-z]*\),red,.*/red: \1/p' rows
sed -e 's/,/ | /g' -e '1!G;h;$!d' rows | head -n 2
tr '[:lower:]' '[:upper:]' < rows | tr -d ',' | head -n 2
cut -d, -f1 rows > names; cut -d, -f2 rows > teams
paste -d: names teams | head -n 3
sort names > a; printf 'ada\nbob\nzed\n' > b
comm -3 a b | tr '\t' '>'
printf 'ada x\nbob y\n' > j1; printf 'ada 1\nbob 2\n' > j2
join j1 j2
wc -l < rows; nl -ba names | head -n 2
awk 'BEGIN { printf "%.3f %d %s\n", atan2(0, -1), length("four"), toupper(substr("judge", 2, 3)) }'
