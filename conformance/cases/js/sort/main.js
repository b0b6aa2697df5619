// Sorting: a million numbers in an Int32Array and in an Array with a
// comparator, records (Array.prototype.sort is stable), strings.
let x = 987654321n;
const M = (1n << 64n) - 1n;
// A 32-bit LCG in plain numbers for speed; the 64-bit one for the seed.
x = (x * 6364136223846793005n + 1442695040888963407n) & M;
let s = Number(x >> 40n);
function next() {
  s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
  return s;
}
const a = new Int32Array(1000000);
for (let i = 0; i < a.length; i++) a[i] = next() >>> 1;
a.sort();
let h = 0;
for (const v of a) h = (Math.imul(h, 31) + v) | 0;
console.log(`min=${a[0]} max=${a[a.length - 1]} median=${a[a.length >> 1]} hash=${h}`);
const arr = Array.from({ length: 300000 }, () => next() % 100000);
arr.sort((p, q) => p - q);
console.log(`array: ${arr[0]} ${arr[150000]} ${arr[arr.length - 1]}`);
const items = Array.from({ length: 200000 }, (_, i) => ({ key: next() % 1000, id: i }));
items.sort((p, q) => q.key - p.key);
let unstable = 0;
for (let i = 1; i < items.length; i++) if (items[i - 1].key === items[i].key && items[i - 1].id > items[i].id) unstable++;
console.log(`first=${JSON.stringify(items[0])} last=${JSON.stringify(items[items.length - 1])} unstable pairs=${unstable}`);
console.log(["pear", "apple", "fig", "banana", "kiwi", "cherry"].sort((p, q) => p.length - q.length || (p < q ? -1 : 1)).join(","));
console.log([10, 9, 1, 100, 25].sort().join(","), [3.5, -1, 2.25, 0, -7.5].sort((p, q) => p - q).join(","));
