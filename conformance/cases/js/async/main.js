// The event loop: the order of nextTick, microtasks, timers and
// setImmediate; async/await, Promise.all, allSettled, race. (A timeout of
// 0 and an immediate set from the main module run in either order; from
// an I/O callback the immediate is first.)
const order = [];
const ioDone = new Promise((res) => {
  require("fs").readFile(__filename, () => {
    setTimeout(() => { order.push("timeout 0"); res(); }, 0);
    setImmediate(() => order.push("immediate"));
  });
});
process.nextTick(() => order.push("nextTick"));
Promise.resolve().then(() => order.push("microtask"));
queueMicrotask(() => order.push("queueMicrotask"));
order.push("sync");

const sleep = (ms, v) => new Promise((res) => setTimeout(() => res(v), ms));

async function square(x) {
  await sleep(10 - x);
  return x * x;
}

async function main() {
  await ioDone;
  console.log(order.join(", "));
  const sq = await Promise.all([1, 2, 3, 4, 5].map(square));
  console.log("all:", sq.join(" "));
  const settled = await Promise.allSettled([sleep(5, "ok"), Promise.reject(new Error("no"))]);
  console.log("allSettled:", settled.map((s) => s.status + ":" + (s.value ?? s.reason.message)).join(" "));
  console.log("race:", await Promise.race([sleep(50, "slow"), sleep(1, "fast")]));
  let ticks = 0;
  await new Promise((res) => {
    const iv = setInterval(() => {
      if (++ticks === 3) { clearInterval(iv); res(); }
    }, 5);
  });
  console.log("interval ticks:", ticks);
  try {
    await (async () => { throw new TypeError("async boom"); })();
  } catch (e) {
    console.log("caught:", e.name, e.message);
  }
}
main().then(() => console.log("done"));
