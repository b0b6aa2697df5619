// Package scaleout holds the end-to-end test of several svc instances
// behind a load balancer; it has no code of its own to import.
//
// TestScaleOut starts, on loopback, a real redis-server, three `svc serve`
// processes built from ./cmd/svc that share it as their step cache
// (CACHE_URL=redis://..., one CACHE_NAMESPACE) and a real nginx that
// balances them round-robin, then talks to nginx with package client as a
// user would. It proves what the specification promises about scale-out:
//
//   - a step stored by one instance is replayed by another, with results
//     identical to the byte;
//   - a step with collected outputs replayed by another instance has the
//     same outputs, stored again in that instance's file store: the
//     request and the download of its output, sent with one
//     X-Svc-Affinity, both reach the instance that ran it;
//   - a file uploaded to one instance is missing on another
//     (file_not_found); the client uploads it again and sends the request
//     again, both with one X-Svc-Affinity, which nginx hashes: they reach
//     one instance together and the request succeeds, also when the
//     file's instance was stopped;
//   - DELETE /cache through one instance drops the layers of every
//     instance;
//   - SIGTERM to one instance under load loses no request: the ones it
//     was running answer shutting_down and the client sends them again,
//     to another instance;
//   - with Redis gone, hits become misses and every request still
//     succeeds.
//
// Which instance answered each attempt is observed, not assumed: nginx
// adds the upstream's address to every response (X-Upstream-Addr), the
// test's HTTP transport records it with the status and error code of each
// attempt, and each instance's own /metrics counters are read directly
// to confirm it.
//
// The test needs root (sandboxes), nginx and redis-server (the Debian
// packages nginx and redis-server). Without root it is skipped; without
// the two programs it is skipped, except in CI (CI=true), where that is a
// failure.
package scaleout
