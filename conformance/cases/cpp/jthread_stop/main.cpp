// C++20: jthread with a stop_token, latch and barrier, a counting semaphore.
#include <barrier>
#include <iostream>
#include <latch>
#include <semaphore>
#include <thread>
#include <vector>
using namespace std;

int main() {
    atomic<int> ticks{0};
    {
        jthread worker([&](stop_token st) {
            while (!st.stop_requested()) {
                ticks++;
                this_thread::sleep_for(1ms);
            }
        });
        while (ticks < 5)
            this_thread::yield();
    }
    cout << "worker stopped after >= 5 ticks: " << (ticks >= 5) << '\n';
    latch ready(3);
    barrier sync(3);
    counting_semaphore<2> slots(2);
    atomic<int> inside{0}, maxInside{0};
    vector<jthread> ts;
    for (int i = 0; i < 3; i++)
        ts.emplace_back([&] {
            ready.count_down();
            sync.arrive_and_wait();
            slots.acquire();
            int now = ++inside;
            int m = maxInside;
            while (now > m && !maxInside.compare_exchange_weak(m, now))
                ;
            this_thread::sleep_for(5ms);
            --inside;
            slots.release();
        });
    ready.wait();
    ts.clear();
    cout << "at most 2 inside: " << (maxInside <= 2) << '\n';
    return 0;
}
