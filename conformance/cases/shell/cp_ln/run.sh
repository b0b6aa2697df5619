# cp -a keeps modes, links and times; ln -s and ln; mv; rm -r.
mkdir -p src/d
echo data > src/file
chmod 640 src/file
chmod 750 src/d
ln -s file src/link
ln src/file src/hard
touch -d '2010-05-06 07:08:09' src/file
cp -a src dst
stat -c '%n %a %F %h' dst/file dst/d dst/link dst/hard | sort
stat -c '%y' dst/file | cut -c1-19
readlink dst/link
test -L dst/link && echo "dst/link is a link"
cp -r src plain && test -L plain/link && echo "cp -r keeps the link too"
ln -sf ../src/file dst/abs
cat dst/abs
mv dst moved && ls moved | sort | tr '\n' ' '
echo
rm -r moved plain && ls
