#pragma once
#include <memory>
#include <string>
#include <vector>

struct Shape {
    virtual ~Shape() = default;
    virtual double area() const = 0;
    virtual std::string name() const = 0;
};

std::vector<std::unique_ptr<Shape>> makeShapes();

template <typename T> T total(const std::vector<T> &v) {
    T s{};
    for (const auto &x : v)
        s += x;
    return s;
}
