package svc

import "fmt"

// The admit stage: a planned request takes as many task slots as its
// widest step has tasks, or is refused at once. (A queue would wait here.)

// admit lets a request of width tasks at once in, and returns the
// function that lets it out: refused (shutting_down) once Close has
// begun, and refused (capacity_exhausted) when the free slots are fewer
// than width.
func (s *Sandbox) admit(width int) (release func(), err error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, &Error{Code: CodeShuttingDown, Msg: "the sandbox is shutting down"}
	}
	s.running.Add(1)
	s.mu.Unlock()
	if !s.acquire(width) {
		s.running.Done()
		return nil, &Error{Code: CodeCapacityExhausted, Msg: fmt.Sprintf("no free execution slots for a step of %d tasks", width)}
	}
	return func() {
		s.release(width)
		s.running.Done()
	}, nil
}

// acquire takes n task slots, or none when fewer are free.
func (s *Sandbox) acquire(n int) bool {
	for i := range n {
		select {
		case s.slots <- struct{}{}:
		default:
			s.release(i)
			return false
		}
	}
	return true
}

// release gives back n task slots.
func (s *Sandbox) release(n int) {
	for range n {
		<-s.slots
	}
}

// SlotsInUse returns the number of task slots currently held.
func (s *Sandbox) SlotsInUse() int { return len(s.slots) }
