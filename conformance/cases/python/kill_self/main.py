import os
import signal
import threading

got = []
signal.signal(signal.SIGUSR1, lambda s, f: got.append("USR1"))
signal.signal(signal.SIGUSR2, lambda s, f: got.append("USR2"))
signal.signal(signal.SIGTERM, lambda s, f: got.append("TERM"))
os.kill(os.getpid(), signal.SIGUSR1)
signal.raise_signal(signal.SIGUSR2)
signal.pthread_kill(threading.get_ident(), signal.SIGTERM)
print(got)
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
os.kill(os.getpid(), signal.SIGUSR1)
print("pending", signal.sigpending() == {signal.SIGUSR1}, got[3:])
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGUSR1})
print("delivered", got[3:])
signal.signal(signal.SIGUSR1, signal.SIG_IGN)
os.kill(os.getpid(), signal.SIGUSR1)
print("ignored")
os.kill(os.getpid(), 0)
print("alive")
