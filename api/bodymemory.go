package api

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// DefaultMaxRequestMemory is Options.MaxRequestMemory's default: 64 MiB,
// a quarter of the chart's 256 MiB API pod.
const DefaultMaxRequestMemory = 64 << 20

// bodyMemoryWait is how long a request waits for its share of the request
// memory for request bodies before it is answered 503 with Retry-After.
const bodyMemoryWait = 2 * time.Second

// bodyMemoryRetryAfter is the Retry-After, in seconds, of a request refused for
// want of room.
const bodyMemoryRetryAfter = 1

// bodyMemory is the memory that the bodies of the requests being served (and
// the messages of GETs being written) may take together, in bytes: a
// request takes its size from it before its body is read and gives it back
// when answered, so a replica holds at most that much in bodies whatever
// the number of connections (see docs/api.md, "Limits").
type bodyMemory struct {
	mu    sync.Mutex
	total int64
	used  int64
	freed chan struct{} // closed and replaced at each release
}

func newBodyMemory(total int64) *bodyMemory {
	return &bodyMemory{total: total, freed: make(chan struct{})}
}

// take reserves n bytes, waiting up to bodyMemoryWait (or until ctx ends) for
// other requests to give theirs back; n over the whole of it is cut to the
// whole, so a request the size limit allows is never refused for good.
func (b *bodyMemory) take(ctx context.Context, n int64) (release func(), ok bool) {
	n = min(max(n, 0), b.total)
	timer := time.NewTimer(bodyMemoryWait)
	defer timer.Stop()
	for {
		b.mu.Lock()
		if b.used+n <= b.total {
			b.used += n
			b.mu.Unlock()
			var once sync.Once
			return func() { once.Do(func() { b.give(n) }) }, true
		}
		freed := b.freed
		b.mu.Unlock()
		select {
		case <-freed:
		case <-timer.C:
			return nil, false
		case <-ctx.Done():
			return nil, false
		}
	}
}

func (b *bodyMemory) give(n int64) {
	b.mu.Lock()
	b.used -= n
	close(b.freed)
	b.freed = make(chan struct{})
	b.mu.Unlock()
}

// inUse is the bytes reserved now.
func (b *bodyMemory) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// reserve takes n bytes of the memory for request bodies for the request, or
// answers 503 busy with Retry-After and returns false.
func (s *Server) reserve(w http.ResponseWriter, r *http.Request, n int64) (release func(), ok bool) {
	release, ok = s.bodies.take(r.Context(), n)
	if !ok {
		w.Header().Set("Retry-After", strconv.Itoa(bodyMemoryRetryAfter))
		writeError(w, http.StatusServiceUnavailable, "busy",
			fmt.Sprintf("the requests being served hold all the memory for request bodies (%d bytes, DELAYBRIDGE_API_MAX_REQUEST_MEMORY): retry in %d s",
				s.bodies.total, bodyMemoryRetryAfter))
	}
	return release, ok
}

// bodyCost is what a request's body takes from that memory: its declared
// length, or the request size limit when it declares none.
func (s *Server) bodyCost(r *http.Request) int64 {
	if r.ContentLength >= 0 {
		return min(r.ContentLength, s.opts.MaxRequest)
	}
	return s.opts.MaxRequest
}
