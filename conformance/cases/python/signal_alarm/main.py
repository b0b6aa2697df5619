import signal
import time

fired = []


def on_alarm(signum, frame):
    fired.append(signal.Signals(signum).name)


signal.signal(signal.SIGALRM, on_alarm)
signal.alarm(1)
print("pending alarm", signal.alarm(0))
signal.setitimer(signal.ITIMER_REAL, 0.02)
deadline = time.monotonic() + 10
while not fired and time.monotonic() < deadline:
    pass
print("busy loop interrupted", fired)

ticks = []
signal.signal(signal.SIGALRM, lambda s, f: ticks.append(1))
signal.setitimer(signal.ITIMER_REAL, 0.01, 0.01)
while len(ticks) < 5 and time.monotonic() < deadline:
    time.sleep(0.001)
signal.setitimer(signal.ITIMER_REAL, 0)
print("ticks", len(ticks) >= 5)


class Timeout(Exception):
    pass


def raise_timeout(s, f):
    raise Timeout()


signal.signal(signal.SIGALRM, raise_timeout)
signal.setitimer(signal.ITIMER_REAL, 0.05)
try:
    time.sleep(5)
    print("slept")
except Timeout:
    print("sleep cut short by the alarm")
print("itimer left", signal.getitimer(signal.ITIMER_REAL))
print("default", signal.getsignal(signal.SIGINT) is signal.default_int_handler)
