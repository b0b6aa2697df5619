package svc

// ObserveQueue has f see each request arrive at sb's task slots
// ("arrive"), take them ("admit") or go without them ("leave"), in the
// order the queue sees it: f is called under the queue's lock and must not
// call into sb.
func ObserveQueue(sb *Sandbox, f func(req *Request, event string)) {
	sb.slots.mu.Lock()
	defer sb.slots.mu.Unlock()
	sb.slots.observe = f
}
