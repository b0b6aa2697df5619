#include "shapes.hpp"

namespace {
struct Square : Shape {
    double s;
    explicit Square(double s) : s(s) {}
    double area() const override { return s * s; }
    std::string name() const override { return "square"; }
};
struct Circle : Shape {
    double r;
    explicit Circle(double r) : r(r) {}
    double area() const override { return 3.0 * r * r; }
    std::string name() const override { return "circle"; }
};
} // namespace

std::vector<std::unique_ptr<Shape>> makeShapes() {
    std::vector<std::unique_ptr<Shape>> v;
    v.push_back(std::make_unique<Square>(2));
    v.push_back(std::make_unique<Circle>(1));
    v.push_back(std::make_unique<Square>(3));
    return v;
}
