# A pipeline of text tools.
printf 'pear\napple\nfig\napple\npear\napple\n' | sort | uniq -c | sort -rn | awk '{print $2": "$1}'
seq 1 20 | tr '\n' ' ' | sed 's/ $//'
echo
