// Exit codes: process.exitCode set, and an exit handler that sees it;
// an unhandled rejection would exit 1, this one is handled late.
process.on("exit", (code) => console.log("exit handler, code", code));
const p = Promise.reject(new Error("handled"));
p.catch((e) => console.log("caught:", e.message));
console.log("exiting with 42");
console.error("bye");
process.exitCode = 42;
