// std::chrono: sleep_for, sleep_until, steady and system clocks.
#include <chrono>
#include <iostream>
#include <thread>
using namespace std;
using namespace std::chrono;

int main() {
    auto t0 = steady_clock::now();
    this_thread::sleep_for(milliseconds(50));
    this_thread::sleep_until(t0 + milliseconds(120));
    auto el = duration_cast<milliseconds>(steady_clock::now() - t0).count();
    cout << "slept >= 120 ms: " << (el >= 120) << ", < 10 s: " << (el < 10000) << '\n';
    auto now = system_clock::to_time_t(system_clock::now());
    cout << "after 2020: " << (now > 1577836800) << '\n';
    auto hr = high_resolution_clock::now();
    cout << "hr clock moves: " << (high_resolution_clock::now() >= hr) << '\n';
    thread t([] { this_thread::sleep_for(microseconds(500)); });
    t.join();
    cout << "thread slept\n";
    return 0;
}
