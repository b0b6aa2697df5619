// std::thread, mutex, atomic, condition_variable: a producer and two
// consumers, results in a deterministic order.
#include <atomic>
#include <condition_variable>
#include <iostream>
#include <mutex>
#include <queue>
#include <thread>
#include <vector>
using namespace std;

int main() {
    mutex mu;
    condition_variable cv;
    queue<int> q;
    bool done = false;
    atomic<long> sum{0};
    vector<long> perConsumer(2);
    auto consume = [&](int id) {
        for (;;) {
            unique_lock<mutex> lk(mu);
            cv.wait(lk, [&] { return !q.empty() || done; });
            if (q.empty())
                return;
            int v = q.front();
            q.pop();
            lk.unlock();
            sum += v;
            perConsumer[id]++;
        }
    };
    thread c1(consume, 0), c2(consume, 1);
    for (int i = 1; i <= 100000; i++) {
        lock_guard<mutex> lk(mu);
        q.push(i);
        cv.notify_one();
    }
    {
        lock_guard<mutex> lk(mu);
        done = true;
    }
    cv.notify_all();
    c1.join();
    c2.join();
    cout << "sum " << sum << ", consumed " << perConsumer[0] + perConsumer[1] << '\n';
    cout << "hardware_concurrency > 0: " << (thread::hardware_concurrency() > 0) << '\n';
    return 0;
}
