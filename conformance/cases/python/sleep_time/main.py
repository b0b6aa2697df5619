import time

t0 = time.monotonic()
time.sleep(0.05)
t1 = time.monotonic()
print("slept", t1 - t0 >= 0.05)
n0 = time.perf_counter_ns()
time.sleep(0)
print("perf", time.perf_counter_ns() >= n0)
c0 = time.process_time()
x = sum(i * i for i in range(300000))
print("cpu", time.process_time() >= c0, time.thread_time() >= 0)
print("wall", time.time() > 1.6e9, abs(time.time_ns() / 1e9 - time.time()) < 5)
for clk in ("monotonic", "perf_counter", "process_time", "thread_time", "time"):
    print(clk, time.get_clock_info(clk).monotonic)
print(time.clock_getres(time.CLOCK_MONOTONIC) > 0, time.clock_gettime(time.CLOCK_BOOTTIME) > 0)
print(time.strftime("%Y-%m-%d %H:%M:%S %a %j", time.gmtime(1700000000)))
print(time.mktime(time.strptime("2001-02-03 04:05:06", "%Y-%m-%d %H:%M:%S")) > 0, time.timezone, time.tzname)
print(time.asctime(time.gmtime(0)))
