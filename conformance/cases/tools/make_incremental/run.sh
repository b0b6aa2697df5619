set -e
make --no-print-directory
./prog
make --no-print-directory
sleep 1.1
echo '#define VALUE 99' > common.h
make --no-print-directory
./prog
cat a.d
