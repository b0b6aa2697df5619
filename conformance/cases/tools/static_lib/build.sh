# gcc multi-file with a static library made by ar; nm lists its symbols.
set -e
gcc -O2 -c vec.c -o vec.o
gcc -O2 -c strutil.c -o strutil.o
ar rcs libutil.a vec.o strutil.o
ar t libutil.a
nm --defined-only -g libutil.a | grep ' T ' | awk '{print $3}' | sort
gcc -O2 -o app main.c -L. -lutil
./app
