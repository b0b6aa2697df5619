# Traps: EXIT, a handled TERM sent to ourselves, an ignored signal, ERR in bash.
trap 'echo "exit trap, status $?"' EXIT
trap 'echo "got TERM"' TERM
kill -TERM $$
echo "after TERM"
trap '' USR1
kill -USR1 $$
echo "USR1 ignored"
trap 'echo "ERR trap on line $LINENO"' ERR
false
sh -c 'trap "echo child INT" INT; kill -INT $$; echo child goes on'
exit 3
