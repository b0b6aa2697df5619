sort -n -S 1M --parallel=2 | awk 'NR % 30000 == 1 { print } END { print NR }'
sort --version >/dev/null && echo "TMPDIR is $TMPDIR"
