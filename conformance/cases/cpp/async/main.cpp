// std::async with launch::async (threads) and deferred, futures, promise,
// packaged_task.
#include <future>
#include <iostream>
#include <numeric>
#include <vector>
using namespace std;

static long long part(int lo, int hi) {
    long long s = 0;
    for (int i = lo; i < hi; i++)
        s += (long long)i * i % 1009;
    return s;
}

int main() {
    vector<future<long long>> fs;
    for (int k = 0; k < 4; k++)
        fs.push_back(async(launch::async, part, k * 1000000, (k + 1) * 1000000));
    long long total = 0;
    for (auto &f : fs)
        total += f.get();
    cout << "async total " << total << '\n';
    auto d = async(launch::deferred, [] { return 42; });
    cout << "deferred " << d.get() << '\n';
    promise<string> p;
    auto pf = p.get_future();
    thread t([&p] { p.set_value("from a promise"); });
    cout << pf.get() << '\n';
    t.join();
    packaged_task<int(int)> task([](int x) { return x * 2; });
    auto tf = task.get_future();
    thread(move(task), 21).join();
    cout << "packaged " << tf.get() << '\n';
    auto ex = async(launch::async, []() -> int { throw runtime_error("thrown in a task"); });
    try {
        ex.get();
    } catch (const exception &e) {
        cout << "caught: " << e.what() << '\n';
    }
    return 0;
}
