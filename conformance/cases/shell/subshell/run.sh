# Subshells and command substitution: their changes stay inside.
x=outer
(x=inner; cd /; echo "in the subshell: $x $(pwd)")
echo "after: $x $(basename "$(pwd)")"
n=$(echo one two three | wc -w)
echo "words: $n"
nested=$(echo "a$(echo "b$(echo c)")")
echo "nested: $nested"
{ echo grouped; echo lines; } | tr a-z A-Z
( exit 4 )
echo "subshell status $?"
echo "arith $(( (3 + 4) * 5 % 6 ))"
