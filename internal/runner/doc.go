// Package runner is the parent side of a sandbox: it builds sandboxes
// ahead of their tasks through the zygote (internal/initproc is the child
// side), releases a task with its command, feeds its stdin, collects its
// output within limits, enforces the wall and CPU time limits and waits
// until every process of the task is gone.
//
// A [Shell] is a sandbox that runs one task after another; [Shell.Cell]
// makes the next task's process ahead of it, and the [Cell] runs the task
// with its own processes, IPC namespace, cgroups and mounts.
// [Cell.PipeTo] makes one task's stdout another's stdin, relayed by the
// producer's cell, which keeps the transcript.
package runner
