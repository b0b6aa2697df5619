package svc

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"
	"sync/atomic"
)

// One request's walk through the step cache: each leading cacheable step
// is replayed from its layer, or executed in the workspace and stored.

// errReplayFailed is returned by a step whose layer could not be replayed;
// execute then starts the request again in a clean workspace without
// replays.
var errReplayFailed = errors.New("replay failed")

// cacheRun is the step cache's part of one attempt at running a request.
// A nil *cacheRun is a request the cache has nothing to do with.
type cacheRun struct {
	c      *StepCache
	ws     workspace
	stored storedFiles
	keys   []string // of the leading cacheable steps
	limit  int64    // a layer's size bound: the workspace size
	// chain is true while the workspace is the state the key of the
	// previous step names: every step so far was replayed or executed
	// and stored. Once false, no step is looked up or stored.
	chain bool
	// lookups is false on the attempt after a replay failed.
	lookups bool
	// snap is a snapshot of the workspace as it is, nil when unknown.
	snap *tree
	// ahead is what the lookups before admission found; nil when none
	// were made.
	ahead *lookAhead

	replayed, storedN int
}

// newCacheRun returns the cache's part of an attempt at running p in ws,
// nil when the cache is disabled or the request has no leading cacheable
// step. lookups is false on the attempt after a replay failed.
func (s *Sandbox) newCacheRun(ws workspace, p *plan, lookups bool) *cacheRun {
	if len(p.keys) == 0 {
		return nil
	}
	return &cacheRun{
		c: s.cfg.Cache, ws: ws, stored: p.stored, keys: p.keys, limit: s.cfg.WorkspaceSize,
		chain: true, lookups: lookups, ahead: p.ahead,
	}
}

// lookAhead is what the step cache found for a request before it took
// its task slots: the layers of its leading cacheable steps, in order, up
// to the first step the store had none for (or did not answer for).
type lookAhead struct {
	layers []*layer
	blobs  []cacheBlob // of layers; close releases them
	// missed is true when the lookup of step len(layers) found nothing
	// to replay; flown is how many executions of that step's key (of
	// its bucket) this process had finished before that lookup began.
	missed bool
	flown  uint64
}

// lookAhead looks up the layers of p's leading cacheable steps, one after
// the other until one has none, before the request takes its task slots
// (admit): a store that is slow or down then costs the request the time
// of its lookups, at most the cache's Timeout each, but never the
// instance its capacity. It returns nil when p has no cacheable step.
// The blobs found are held until the plan is closed: while the request
// waits for slots too, in memory for a Redis store.
func (s *Sandbox) lookAhead(ctx context.Context, p *plan) *lookAhead {
	if len(p.keys) == 0 {
		return nil
	}
	la := &lookAhead{}
	for i, key := range p.keys {
		flown := s.cfg.Cache.flights.finished(key)
		l, blob := s.cfg.Cache.lookup(ctx, key, len(p.steps[i].tasks))
		if l == nil {
			la.missed, la.flown = true, flown
			break
		}
		la.layers = append(la.layers, l)
		la.blobs = append(la.blobs, blob)
	}
	return la
}

// layer returns the layer found ahead for step i, or nil.
func (la *lookAhead) layer(i int) *layer {
	if la == nil || i >= len(la.layers) {
		return nil
	}
	return la.layers[i]
}

// missedAt reports whether the lookup ahead found no layer for step i,
// and no execution of it in this process has finished since: looking
// it up again would find none either, unless another process stored it.
func (la *lookAhead) missedAt(i int, flights *flightGroup, key string) bool {
	return la != nil && la.missed && i == len(la.layers) && flights.finished(key) == la.flown
}

// close releases the blobs of the layers found.
func (la *lookAhead) close() {
	if la == nil {
		return
	}
	for _, b := range la.blobs {
		b.Close()
	}
	la.layers, la.blobs = nil, nil
}

// chained reports whether step i goes through the cache.
func (cr *cacheRun) chained(i int) bool { return cr != nil && cr.chain && i < len(cr.keys) }

// breakChain stops the cache for the rest of the request.
func (cr *cacheRun) breakChain() {
	if cr != nil {
		cr.chain = false
	}
}

// counts returns the steps replayed and stored.
func (cr *cacheRun) counts() (replayed, stored int) {
	if cr == nil {
		return 0, 0
	}
	return cr.replayed, cr.storedN
}

// step runs step i of the chain: it replays the step's layer if there is
// one, else executes the step and stores its layer. Requests of this
// process at the same step run it once: the first executes it, the
// others wait for it (each under its own deadline) and replay what it
// stored, or execute the step too if it stored nothing.
//
// The lookups made before admission serve here: a step found then is
// replayed, and a step found missing then is executed without another
// lookup, unless the request waited for another one executing it or
// another one's execution of it finished since the lookup.
func (cr *cacheRun) step(ctx context.Context, i int, step *stepPlan) (StepResult, error) {
	if !cr.lookups {
		return cr.execute(ctx, i, step)
	}
	if l := cr.ahead.layer(i); l != nil {
		return cr.apply(ctx, i, step, l)
	}
	finish, wait := cr.c.flights.begin(cr.keys[i])
	waited := finish == nil
	if waited {
		select {
		case <-wait:
		case <-ctx.Done():
			return StepResult{}, ctx.Err()
		}
	} else {
		defer finish()
	}
	if waited || !cr.ahead.missedAt(i, &cr.c.flights, cr.keys[i]) {
		if sr, ok, err := cr.replay(ctx, i, step); ok || err != nil {
			return sr, err
		}
	}
	cr.c.misses.Add(1)
	return cr.execute(ctx, i, step)
}

// replay applies the layer of step i, if the store has a usable one.
func (cr *cacheRun) replay(ctx context.Context, i int, step *stepPlan) (StepResult, bool, error) {
	l, blob := cr.c.lookup(ctx, cr.keys[i], len(step.tasks))
	if l == nil {
		return StepResult{}, false, nil
	}
	defer blob.Close()
	sr, err := cr.apply(ctx, i, step, l)
	return sr, err == nil, err
}

// apply applies l, the layer of step i, to the workspace.
func (cr *cacheRun) apply(ctx context.Context, i int, step *stepPlan, l *layer) (StepResult, error) {
	key := cr.keys[i]
	cr.snap = nil
	if err := cr.ws.applyLayer(l, key); err != nil {
		// The workspace is half changed: Run starts over.
		cr.c.misses.Add(1)
		cr.c.discard(ctx, key, fmt.Errorf("replay: %w", err))
		return StepResult{}, fmt.Errorf("%w: %w", errReplayFailed, err)
	}
	cr.c.hits.Add(1)
	cr.replayed++
	sr := StepResult{Parallel: step.parallel, Results: l.results}
	for j := range sr.Results {
		sr.Results[j].Replayed = true
	}
	cr.ws.spendOutput(sr)
	return sr, nil
}

// execute runs step i and stores its layer: the difference between
// snapshots of the workspace before and after it.
func (cr *cacheRun) execute(ctx context.Context, i int, step *stepPlan) (StepResult, error) {
	key := cr.keys[i]
	before := cr.snap
	cr.snap = nil
	if before == nil {
		var err error
		if before, err = cr.ws.snapshot(); err != nil {
			cr.notStored(key, err)
			cr.chain = false
		}
	}
	sr, err := cr.ws.runStep(ctx, step, cr.stored)
	if err != nil || !cr.chain {
		cr.chain = false
		return sr, err
	}
	if why := unstorable(sr.Results); why != "" {
		cr.c.log.Debug("step cache: not storing a step", "key", key, "reason", why)
		cr.chain = false
		return sr, nil
	}
	after, err := cr.ws.snapshot()
	if err != nil {
		cr.notStored(key, err)
		cr.chain = false
		return sr, nil
	}
	changes, err := diffTrees(before, after)
	if err != nil {
		cr.notStored(key, err)
		cr.chain = false
		return sr, nil
	}
	cr.snap = after
	err = cr.c.put(ctx, key, withoutOutputs(sr.Results), cr.limit, func(lw *layerWriter) error {
		return cr.ws.writeLayer(lw, changes, after)
	})
	if err != nil {
		// Counted and logged by put. The state is still the one the key
		// names, but stop here: a store that failed once will likely
		// fail again, and the rule stays simple (a step after one that
		// was not stored is not stored).
		cr.chain = false
		return sr, nil
	}
	cr.storedN++
	return sr, nil
}

// notStored logs why the step of key is not stored, the snapshot or the
// diff having failed: a workspace no layer can hold (errNoLayer) is the
// task's doing, and not the cache's failure; anything else is counted.
func (cr *cacheRun) notStored(key string, err error) {
	if errors.Is(err, errNoLayer) {
		cr.c.log.Info("step cache: not storing a step", "key", key, "reason", err)
		return
	}
	cr.c.failed("snapshot the workspace", key, err)
}

// flightGroup tracks the steps being executed, by key. It is
// golang.org/x/sync/singleflight's idea, but the waiters need their own
// cancellation: the leader runs the step in its own workspace, and a
// waiter must be able to give up at its own deadline (singleflight's Do
// cannot be abandoned, and DoChan runs the function on another goroutine
// that a cancelled leader could not wait for).
type flightGroup struct {
	mu sync.Mutex // guards m
	m  map[string]chan struct{}
	// done counts the flights finished, by a hash of their key: a
	// request that found a step missing sees whether one finished
	// since (keys sharing a bucket cost an extra lookup, nothing more).
	done [256]atomic.Uint64
}

// bucket is key's counter of finished flights.
func (g *flightGroup) bucket(key string) *atomic.Uint64 {
	h := fnv.New32a()
	h.Write([]byte(key))
	return &g.done[h.Sum32()%uint32(len(g.done))]
}

// finished returns how many flights of key (of its bucket) finished.
func (g *flightGroup) finished(key string) uint64 { return g.bucket(key).Load() }

// begin makes the caller the leader of key and returns finish, which it
// must call when done; or, when another caller leads, returns a channel
// closed when that one finishes.
func (g *flightGroup) begin(key string) (finish func(), wait <-chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if ch, ok := g.m[key]; ok {
		return nil, ch
	}
	if g.m == nil {
		g.m = make(map[string]chan struct{})
	}
	ch := make(chan struct{})
	g.m[key] = ch
	return func() {
		g.mu.Lock()
		delete(g.m, key)
		g.mu.Unlock()
		g.bucket(key).Add(1)
		close(ch)
	}, nil
}
