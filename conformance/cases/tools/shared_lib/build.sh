# A shared library with -fPIC, linked with an $ORIGIN rpath; ldd-free checks.
set -e
gcc -O2 -fPIC -shared -o libgreet.so greet.c
gcc -O2 -o app main.c -L. -lgreet -Wl,-rpath,'$ORIGIN'
./app
readelf -d app | grep -o 'RUNPATH.*' | sed 's/ *$//'
LD_LIBRARY_PATH=. ./app
