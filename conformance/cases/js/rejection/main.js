// An unhandled promise rejection ends the process: the error on stderr,
// exit status 1 (Node 15 and later).
console.log("before");
setTimeout(() => console.log("never printed"), 100);
Promise.reject(new RangeError("nobody catches this"));
