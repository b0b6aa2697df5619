# bash: arrays, associative arrays, [[ ]], parameter expansion, printf -v,
# process substitution, brace expansion, pipefail.
set -o pipefail
arr=(one two "three four")
echo "${#arr[@]} ${arr[2]} ${arr[@]:1:1}"
declare -A ages=([ada]=36 [bob]=28)
for k in $(printf '%s\n' "${!ages[@]}" | sort); do echo "$k=${ages[$k]}"; done
s="hello.tar.gz"
echo "${s%%.*} ${s#*.} ${s/l/L} ${s//l/L} ${s^^} ${#s}"
[[ $s == *.gz && $s =~ ^h(el+)o ]] && echo "match ${BASH_REMATCH[1]}"
printf -v padded '%05d' 42; echo "$padded"
echo {a..e} {1..10..3}
diff <(seq 3) <(seq 3) && echo "process substitution"
false | true; echo "pipefail status $?"
mapfile -t lines < <(printf 'x\ny\n'); echo "${lines[*]}"
(( n = 2 ** 10 )); echo "$n"
