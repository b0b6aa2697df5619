// Reads all of stdin as a stream (for await over process.stdin), then
// describes it: bytes, lines, sha256.
const crypto = require("crypto");
async function main() {
  const chunks = [];
  for await (const c of process.stdin) chunks.push(c);
  const b = Buffer.concat(chunks);
  let lines = 0;
  for (const x of b) if (x === 10) lines++;
  const h = crypto.createHash("sha256").update(b).digest("hex");
  console.log(`bytes=${b.length} lines=${lines} sha256=${h}`);
}
main();
