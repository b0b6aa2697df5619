package initproc

import "syscall"

// Report is what the init and the task said about one task.
type Report struct {
	SetupError string // 'F': the sandbox could not be built
	Ready      bool   // 'R': the task process waited for its command
	// Listener is the fd, in the task process, of its watched filter's
	// listener ('R' with a number); -1 for none.
	Listener     int
	WorkdirError string             // 'W': the working directory failed
	Exited       bool               // 'X': the task ended by itself
	Status       syscall.WaitStatus // valid when Exited
}
