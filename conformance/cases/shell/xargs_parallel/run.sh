# xargs -P: four at a time, output sorted; -0 with find; -I.
seq 1 40 | xargs -P 4 -n 1 sh -c 'echo "$(( $1 * $1 ))"' _ | sort -n | tr '\n' ' '
echo
mkdir -p d && for f in a b 'with space'; do echo "$f" > "d/$f.txt"; done
find d -name '*.txt' -print0 | xargs -0 -P 2 cat | sort
seq 3 | xargs -I{} echo "item {} of 3"
