# Archives: tar with gzip, listed and extracted elsewhere, compared; gzip
# and gunzip through pipes; checksums.
set -e
mkdir -p src/sub
seq 1 1000 > src/numbers.txt
printf 'hello\n' > src/sub/hello.txt
ln -s numbers.txt src/link
tar czf archive.tar.gz src
tar tzf archive.tar.gz | sort
mkdir out
tar xzf archive.tar.gz -C out
diff -r src out/src && echo "extracted tree identical"
readlink out/src/link
seq 1 5000 | gzip -9 | gunzip | tail -n 1
gzip -c src/numbers.txt > n.gz
gzip -t n.gz && echo "gzip -t ok"
zcat n.gz | sha256sum | cut -c1-16
sha256sum src/numbers.txt src/sub/hello.txt
tar cf - src | tar tf - | wc -l
