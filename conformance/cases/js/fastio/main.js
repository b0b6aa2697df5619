// Fast input as judges write it: all of stdin with readFileSync(0),
// parsed by hand from the bytes; the output joined and written once.
const fs = require("fs");
const buf = fs.readFileSync(0);
let pos = 0;
function next() {
  while (buf[pos] === 32 || buf[pos] === 10 || buf[pos] === 13) pos++;
  let neg = false;
  if (buf[pos] === 45) { neg = true; pos++; }
  let r = 0;
  while (buf[pos] >= 48 && buf[pos] <= 57) r = r * 10 + (buf[pos++] - 48);
  return neg ? -r : r;
}
const n = next();
let sum = 0n, xor = 0, max = -Infinity;
const out = [];
for (let i = 0; i < n; i++) {
  const v = next();
  sum += BigInt(v);
  xor ^= v;
  if (v > max) max = v;
  if (i % 10000 === 0) out.push(`${i} ${v}`);
}
out.push(`n=${n} sum=${sum} xor=${xor} max=${max}`);
process.stdout.write(out.join("\n") + "\n");
