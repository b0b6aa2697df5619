// Output formatting: fixed, setprecision, setw, hex, showpos, boolalpha.
#include <iomanip>
#include <iostream>
#include <limits>
using namespace std;

int main() {
    double pi = 3.14159265358979;
    cout << fixed << setprecision(3) << pi << ' ' << setprecision(10) << pi << '\n';
    cout << scientific << setprecision(4) << 123456.789 << '\n';
    cout << defaultfloat << 0.1 + 0.2 << ' ' << setprecision(17) << 0.1 + 0.2 << '\n';
    cout << setw(8) << setfill('*') << 42 << '|' << left << setw(6) << "ab" << "|\n";
    cout << hex << showbase << 255 << ' ' << oct << 8 << dec << noshowbase << '\n';
    cout << showpos << 5 << noshowpos << ' ' << boolalpha << true << ' ' << noboolalpha << false << '\n';
    cout << numeric_limits<long long>::max() << ' ' << numeric_limits<double>::infinity() << '\n';
    long double ld = 1.0L / 7;
    cout << setprecision(20) << ld << '\n';
    return 0;
}
