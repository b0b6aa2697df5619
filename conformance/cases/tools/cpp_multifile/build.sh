# g++ on several translation units in parallel (background jobs), then
# linked; size(1) of the objects agrees on both sides.
set -e
g++ -O2 -std=c++17 -c shapes.cpp -o shapes.o &
g++ -O2 -std=c++17 -c main.cpp -o main.o &
wait
g++ -o app main.o shapes.o
./app
