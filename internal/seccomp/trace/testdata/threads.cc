// threads.cc: a multithreaded C++ submission: std::thread, mutex,
// condition_variable, async, atomics, iostream, exceptions, sleeping.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <iostream>
#include <map>
#include <mutex>
#include <numeric>
#include <queue>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

int main()
{
	std::ios::sync_with_stdio(false);
	std::vector<long long> in;
	for (long long x; std::cin >> x;)
		in.push_back(x);

	std::mutex mu;
	std::condition_variable cv;
	std::queue<long long> work;
	std::atomic<long long> sum{0};
	bool done = false;
	unsigned n = std::max(2u, std::min(4u, std::thread::hardware_concurrency()));
	std::vector<std::thread> pool;
	for (unsigned i = 0; i < n; i++)
		pool.emplace_back([&] {
			for (;;) {
				std::unique_lock<std::mutex> l(mu);
				cv.wait(l, [&] { return done || !work.empty(); });
				if (work.empty())
					return;
				long long v = work.front();
				work.pop();
				l.unlock();
				sum += v * v;
				std::this_thread::yield();
			}
		});
	for (long long v : in) {
		{
			std::lock_guard<std::mutex> l(mu);
			work.push(v);
		}
		cv.notify_one();
	}
	{
		std::lock_guard<std::mutex> l(mu);
		done = true;
	}
	cv.notify_all();
	for (auto &t : pool)
		t.join();

	auto f = std::async(std::launch::async, [&] {
		std::this_thread::sleep_for(std::chrono::milliseconds(2));
		return std::accumulate(in.begin(), in.end(), 0LL);
	});
	std::map<std::string, int> m{{"a", 1}, {"b", 2}};
	try {
		m.at("c");
	} catch (const std::out_of_range &) {
		m["c"] = 3;
	}
	auto start = std::chrono::steady_clock::now();
	std::cout << "squares " << sum << " sum " << f.get() << " map " << m.size()
		  << " threads " << n << (std::chrono::steady_clock::now() >= start ? "" : "?")
		  << std::endl;
	return 0;
}
