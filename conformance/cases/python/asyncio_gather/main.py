import asyncio


async def job(i, delay):
    await asyncio.sleep(delay)
    return i * i


async def producer(q):
    for i in range(5):
        await q.put(i)
        await asyncio.sleep(0)
    await q.put(None)


async def consumer(q, out):
    while (item := await q.get()) is not None:
        out.append(item)


def blocking(n):
    return sum(range(n))


async def main():
    print(await asyncio.gather(*(job(i, 0.01 * (5 - i)) for i in range(5))))
    q = asyncio.Queue()
    out = []
    await asyncio.gather(producer(q), consumer(q, out))
    print(out)
    try:
        await asyncio.wait_for(asyncio.sleep(10), timeout=0.05)
    except asyncio.TimeoutError:
        print("timed out")
    loop = asyncio.get_running_loop()
    print(await loop.run_in_executor(None, blocking, 100000))
    done = []
    loop.call_later(0.01, done.append, "later")
    await asyncio.sleep(0.05)
    print(done)


asyncio.run(main())
