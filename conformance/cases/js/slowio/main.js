// Slow I/O: readline over process.stdin (the event loop) and a
// console.log per number.
const readline = require("readline");
const rl = readline.createInterface({ input: process.stdin });
let n = -1, seen = 0, sum = 0;
rl.on("line", (line) => {
  if (n < 0) { n = Number(line); return; }
  for (const t of line.split(" ")) {
    if (t === "") continue;
    sum += Number(t);
    seen++;
    console.log(sum);
  }
});
rl.on("close", () => console.log(`done ${seen} of ${n}`));
