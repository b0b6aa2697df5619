// Hash maps: word counts in a Map over a large generated text, the top
// words, and a Set of pairs; an object used as a map too.
const text = require("fs").readFileSync(0, "utf8");
const count = new Map();
const pairs = new Set();
const obj = Object.create(null);
let prev = "", words = 0;
for (const w of text.split(/\s+/)) {
  if (w === "") continue;
  words++;
  count.set(w, (count.get(w) || 0) + 1);
  obj[w] = (obj[w] || 0) + 1;
  pairs.add(prev + " " + w);
  prev = w;
}
const es = [...count.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
console.log(`words=${words} distinct=${count.size} pairs=${pairs.size} object keys=${Object.keys(obj).length}`);
for (const [w, c] of es.slice(0, 10)) console.log(w, c);
