#include "shapes.hpp"
#include <iostream>

int main() {
    std::vector<double> areas;
    for (auto &s : makeShapes()) {
        std::cout << s->name() << ' ' << s->area() << '\n';
        areas.push_back(s->area());
    }
    std::cout << "total " << total(areas) << '\n';
}
