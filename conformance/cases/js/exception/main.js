// Exceptions: caught ones, then an uncaught one: Node prints the source
// line and the stack on stderr and exits with status 1.
try {
  JSON.parse("{x");
} catch (e) {
  console.log("caught:", e.name);
}
try {
  null.f();
} catch (e) {
  console.log("caught:", e.name);
}
function fail(depth) {
  if (depth === 0) throw new Error("boom at the bottom");
  fail(depth - 1);
}
console.log("now failing");
fail(3);
