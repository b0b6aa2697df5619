import asyncio


async def run(*argv, data=None):
    p = await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
    out, _ = await p.communicate(data)
    return p.returncode, out


async def main():
    results = await asyncio.gather(
        run("sort", data=b"c\nb\na\n"),
        run("sh", "-c", "sleep 0.05; echo done; exit 3"),
        run("cat", data=b"x" * 100000),
    )
    for code, out in results:
        print(code, len(out), out[:20])
    p = await asyncio.create_subprocess_shell("echo shell", stdout=asyncio.subprocess.PIPE)
    print(await p.stdout.read(), await p.wait())


asyncio.run(main())
