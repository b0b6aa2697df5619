# Redirections: >, >>, 2>&1, exec with numbered descriptors, <> and noclobber.
echo first > f
echo second >> f
{ echo to-out; echo to-err >&2; } > both 2>&1
exec 3> three
echo via-fd-3 >&3
exec 3>&-
exec 4< f
read -r line <&4
echo "fd 4 gave: $line"
cat f both three
set -C
(echo clobber > f) 2>/dev/null || echo "noclobber refused"
ls nothing-here 2>/dev/null || echo "stderr discarded"
echo done 1>&2
