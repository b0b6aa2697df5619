// Deep recursion: a depth-first search down a path of 100000 nodes. Run
// with --stack-size, as judges do: the main thread's stack is the
// process's (RLIMIT_STACK), large in the sandbox and on the host.
function walk(n) {
  const next = new Int32Array(n);
  const depth = new Float64Array(n);
  for (let i = 0; i < n; i++) next[i] = i + 1 < n ? i + 1 : -1;
  function dfs(v, d) {
    depth[v] = d;
    if (next[v] < 0) return d;
    return dfs(next[v], d + 1) + 1;
  }
  const r = dfs(0, 0);
  return `n=${n} r=${r} last=${depth[n - 1]}`;
}
console.log("main: " + walk(100000));
let depth = 0;
function down() { depth++; down(); }
try { down(); } catch (e) { console.log(`caught ${e.constructor.name} deep=${depth > 100000}`); }
