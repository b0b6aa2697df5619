# asyncio: gather of sleeping coroutines, a queue between tasks, wait_for
# with a timeout, run_in_executor onto a thread.
import asyncio


async def square(x):
    await asyncio.sleep(0.01 * (5 - x))
    return x * x


async def producer(q):
    for i in range(5):
        await q.put(i)
    await q.put(None)


async def consumer(q):
    total = 0
    while (item := await q.get()) is not None:
        total += item
    return total


async def main():
    print("gather:", await asyncio.gather(*(square(x) for x in range(5))))
    q = asyncio.Queue()
    _, total = await asyncio.gather(producer(q), consumer(q))
    print("queue total:", total)
    try:
        await asyncio.wait_for(asyncio.sleep(10), timeout=0.05)
    except asyncio.TimeoutError:
        print("timed out")
    loop = asyncio.get_running_loop()
    print("executor:", await loop.run_in_executor(None, sum, range(1000)))


asyncio.run(main())
