package svc

// Internals the external cache tests (package svc_test) use.

import "bytes"

// QuiesceForTest stops preparing sandboxes ahead, removes the prepared
// ones and waits until every finished request is torn down, so that a
// test sees exactly what requests left behind. resume prepares again.
func QuiesceForTest(sb *Sandbox) (resume func()) {
	sb.drainPool()
	sb.host.drain()
	return sb.startPreparing
}

// IdentitySlotsForTest is the number of identity slots of a Sandbox with
// Limits.MaxConcurrency maxConcurrency, two host ids each from UIDBase.
func IdentitySlotsForTest(maxConcurrency int) int { return identitySlots(maxConcurrency) }

// StepKeysForTest returns the keys of the leading cacheable steps of req
// as sb computes them: those of its plan.
func StepKeysForTest(sb *Sandbox, req *Request) []string {
	p, err := sb.plan(req)
	if err != nil {
		panic(err)
	}
	defer p.close()
	return p.keys
}

// stepKeys returns the keys of the first n steps of req, validated, with
// def the default profile: the keys a plan of req has, for the tests of
// the key code (cache_golden_test.go, cache_layer_test.go).
func stepKeys(root [32]byte, req *Request, n int, def Profile) []string {
	return chainKeys(root, resolveSteps(req, def, Limits{})[:n])
}

// LayerPathForTest returns the file of key in a dir:// cache.
func LayerPathForTest(c *StepCache, key string) string { return c.store.(*dirCache).path(key) }

// LayerEntryForTest is an entry of a layer made by EncodeLayerForTest.
// Kind is 'w', 'd', 'l' or 'f'; Content is a file's.
type LayerEntryForTest struct {
	Kind            byte
	Path            string
	Mode            uint32
	Target, Content string
}

// EncodeLayerForTest returns the blob of a layer of key, with a valid
// digest, whatever its entries say.
func EncodeLayerForTest(key, resultsJSON string, entries []LayerEntryForTest) []byte {
	var b bytes.Buffer
	lw := newLayerWriter(&b, key, []byte(resultsJSON), 1<<40)
	for _, e := range entries {
		le := &layerEntry{kind: e.Kind, path: e.Path, mode: e.Mode, target: e.Target, size: int64(len(e.Content)), sec: 1e9}
		if err := lw.writeEntry(le); err != nil { // bad ones too
			panic(err)
		}
		if e.Kind == kindFile {
			if err := lw.content(bytes.NewReader([]byte(e.Content)), le.size); err != nil {
				panic(err)
			}
		}
	}
	if _, err := lw.close(); err != nil {
		panic(err)
	}
	return b.Bytes()
}
