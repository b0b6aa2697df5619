// Hello world, with UTF-8 text, and a line on stderr.
console.log("Hello, World!");
console.log("héllo wörld ✓ 日本");
console.error("to stderr");
