// worker_threads: four workers count primes in ranges and post the
// results; a SharedArrayBuffer summed with Atomics.
const { Worker, isMainThread, parentPort, workerData } = require("worker_threads");

function primes(lo, hi) {
  let c = 0;
  for (let i = Math.max(lo, 2); i < hi; i++) {
    let p = true;
    for (let d = 2; d * d <= i; d++) if (i % d === 0) { p = false; break; }
    if (p) c++;
  }
  return c;
}

if (isMainThread) {
  const shared = new Int32Array(new SharedArrayBuffer(4));
  const run = (k) => new Promise((res, rej) => {
    const w = new Worker(__filename, { workerData: { k, shared } });
    w.on("message", res);
    w.on("error", rej);
  });
  Promise.all([0, 1, 2, 3].map(run)).then((rs) => {
    for (const r of rs) console.log(`range ${r.k}: ${r.c}`);
    console.log("primes below 2e6:", rs.reduce((s, r) => s + r.c, 0));
    console.log("shared:", Atomics.load(shared, 0));
  });
} else {
  const { k, shared } = workerData;
  for (let i = 0; i < 100000; i++) Atomics.add(shared, 0, 1);
  parentPort.postMessage({ k, c: primes(k * 500000, (k + 1) * 500000) });
}
