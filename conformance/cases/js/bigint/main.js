// BigInt: factorial, powers, modular exponentiation, Fibonacci.
let f = 1n;
for (let i = 2n; i <= 3000n; i++) f *= i;
const fs = f.toString();
let ds = 0;
for (const c of fs) ds += c.charCodeAt(0) - 48;
console.log(`3000! has ${fs.length} digits, digit sum ${ds}, starts ${fs.slice(0, 30)}`);
const p = 2n ** 20000n;
console.log(`2^20000 mod 1e9+7 = ${p % 1000000007n}, bits ${p.toString(2).length}`);
function modpow(b, e, m) {
  let r = 1n;
  b %= m;
  while (e > 0n) {
    if (e & 1n) r = (r * b) % m;
    b = (b * b) % m;
    e >>= 1n;
  }
  return r;
}
const m = 170141183460469231731687303715884105727n;
console.log(`3^(m-1) mod m = ${modpow(3n, m - 1n, m)}`);
let a = 0n, b = 1n;
for (let i = 0; i < 10000; i++) [a, b] = [b, a + b];
const s = a.toString();
console.log(`fib(10000) ends ${s.slice(-40)}, ${s.length} digits`);
console.log(BigInt.asUintN(64, -1n), BigInt.asIntN(64, 2n ** 63n));
