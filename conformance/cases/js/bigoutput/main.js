// Large output: 70000 lines, written in chunks of 1000 lines with
// process.stdout.write.
let chunk = [];
for (let i = 0; i < 70000; i++) {
  chunk.push(`${i} ${Number(BigInt(i) * BigInt(i) % 1000003n)}`);
  if (chunk.length === 1000) {
    process.stdout.write(chunk.join("\n") + "\n");
    chunk = [];
  }
}
