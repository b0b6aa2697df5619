package svc

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"
)

// An upload to a shared store that grows past one part is sent to it in
// parts while it arrives, from the spool, so that the store has nearly
// all of it when the last byte is read: the upload then costs the
// slower of the client and the store, not their sum. The parts are
// staged content (fileObjects.stage) that becomes the file, once it is
// hashed, by fileObjects.link.

// Parts of a staged upload.
const (
	// minStagePart is the size of a part of a staged upload, unless the
	// upload limit needs larger ones to stay within maxStageParts.
	minStagePart = 8 * MiB
	// maxStageParts is S3's limit of the parts of one upload.
	maxStageParts = 10000
	// stageWidth is how many parts are sent at once.
	stageWidth = 2
)

// stagePart is the size of the parts of an upload that is staged: any
// larger than one part.
func (s *FileStore) stagePart() int64 {
	return max(minStagePart, (s.maxPut+maxStageParts-1)/maxStageParts)
}

// partStream sends an upload's spool to the shared store in parts, on
// goroutines of its own, as the upload's receive loop queues them.
type partStream struct {
	s      *FileStore
	ctx    context.Context // the upload's; cancelled by abort
	cancel context.CancelFunc
	src    *os.File // the spool, read at the offsets of parts
	size   int64    // of a part
	queued int64    // bytes queued as parts
	parts  int      // parts queued
	jobs   chan streamPart
	done   chan struct{} // closed when every queued part has ended
	closed bool          // jobs is closed

	mu  sync.Mutex
	st  stagedContent // nil until staged
	err error         // the first failure
}

type streamPart struct {
	n         int
	off, size int64
}

// startStream begins sending the spool at path in parts of size.
func (s *FileStore) startStream(ctx context.Context, path string, size int64) (*partStream, error) {
	src, err := os.Open(path)
	if err != nil {
		return nil, s.ioError("upload", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	p := &partStream{s: s, ctx: ctx, cancel: cancel, src: src, size: size,
		jobs: make(chan streamPart, s.maxPut/size+2), done: make(chan struct{})}
	go p.run()
	return p, nil
}

// run stages the content, then sends the queued parts, stageWidth at a
// time, until the queue is closed or a part fails.
func (p *partStream) run() {
	defer close(p.done)
	// Not cancelled with the upload: a call cancelled in flight may
	// still have begun the staged content, which abort then would not
	// know of. The store's deadline bounds it.
	st, err := callStore(context.WithoutCancel(p.ctx), p.s, p.s.timeout, "stage a file", "",
		func(ctx context.Context) (stagedContent, error) { return p.s.remote.stage(ctx) },
		func(st stagedContent) { p.abortLate(st) })
	p.mu.Lock()
	p.st = st
	p.mu.Unlock()
	if err != nil {
		p.fail(err)
		for range p.jobs {
		}
		return
	}
	var wg sync.WaitGroup
	slots := make(chan struct{}, stageWidth)
	for j := range p.jobs {
		if p.failed() != nil {
			continue
		}
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			_, err := callStore(p.ctx, p.s, p.s.transfer(j.size), "stage a file", "", func(ctx context.Context) (struct{}, error) {
				return struct{}{}, st.part(ctx, j.n, io.NewSectionReader(p.src, j.off, j.size), j.size)
			}, nil)
			if err != nil {
				p.fail(err)
			}
		})
	}
	wg.Wait()
}

func (p *partStream) fail(err error) {
	p.mu.Lock()
	if p.err == nil {
		p.err = err
	}
	p.mu.Unlock()
}

// failed returns the first failure of a part, if any.
func (p *partStream) failed() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// queue queues the parts that have arrived, the spool holding received
// bytes: every whole part but the last, which finish sends. It returns
// the failure of a part sent before, if any: the upload ends then.
func (p *partStream) queue(received int64) error {
	for received-p.queued > p.size {
		p.parts++
		p.jobs <- streamPart{n: p.parts, off: p.queued, size: p.size}
		p.queued += p.size
	}
	return p.failed()
}

func (p *partStream) closeJobs() {
	if !p.closed {
		p.closed = true
		close(p.jobs)
	}
}

// finish sends the last part of an upload of total bytes, waits for
// every part, and completes the staged content: it returns its
// reference.
func (p *partStream) finish(ctx context.Context, total int64) (string, error) {
	if total > p.queued {
		p.parts++
		p.jobs <- streamPart{n: p.parts, off: p.queued, size: total - p.queued}
		p.queued = total
	}
	p.closeJobs()
	select {
	case <-p.done:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	if err := p.failed(); err != nil {
		return "", err
	}
	return callStore(ctx, p.s, p.s.transfer(total), "stage a file", "",
		func(ctx context.Context) (string, error) { return p.st.complete(ctx) }, nil)
}

// abort stops the stream and removes what it staged. What it cannot
// remove (the store failing) is the store's tidy's.
func (p *partStream) abort() {
	p.cancel()
	p.closeJobs()
	<-p.done
	p.src.Close()
	p.mu.Lock()
	st := p.st
	p.mu.Unlock()
	if st != nil {
		p.abortLate(st)
	}
}

// abortLate removes staged content whose upload has ended.
func (p *partStream) abortLate(st stagedContent) {
	_, err := callStore(context.Background(), p.s, p.s.timeout, "remove a staged file", "",
		func(ctx context.Context) (struct{}, error) { return struct{}{}, st.abort(ctx) }, nil)
	if err != nil && !errors.Is(err, errCacheUnavailable) {
		p.s.log.Warn("file store: an upload's staged content stays in the store until it is tidied", "err", err)
	}
}

// keep ends the stream of content that is now a file's.
func (p *partStream) keep() {
	p.cancel()
	p.src.Close()
}
