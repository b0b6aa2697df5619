// String processing: per line, reversal (by code points), case,
// palindromes, numbers, sorted words, and a character histogram.
const lines = require("fs").readFileSync(0, "utf8").split("\n");
if (lines[lines.length - 1] === "") lines.pop();
const hist = new Map();
lines.forEach((line, i) => {
  const rev = [...line].reverse().join("");
  const clean = line.toLowerCase().replace(/[^a-z0-9]/g, "");
  const pal = clean === [...clean].reverse().join("");
  const sum = (line.match(/-?\d+/g) || []).reduce((s, t) => s + Number(t), 0);
  const words = line.trim().split(/\s+/).sort();
  console.log(`${String(i + 1).padStart(3)}|${rev}|${line.toUpperCase()}|pal=${pal}|sum=${sum}|words=${words.join(",")}`);
  for (const c of line) hist.set(c, (hist.get(c) || 0) + 1);
});
const keys = [...hist.keys()].sort((a, b) => a.codePointAt(0) - b.codePointAt(0));
console.log("histogram: " + keys.map((c) => `${c}=${hist.get(c)}`).join(" "));
console.log(new Intl.NumberFormat("en-US").format(1234567.891), "straße".normalize("NFD").length);
