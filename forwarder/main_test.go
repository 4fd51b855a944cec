package forwarder

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/delaybridge/delaybridge/internal/testing/faultproxy"
	"github.com/delaybridge/delaybridge/internal/testing/redistest"
	"github.com/delaybridge/delaybridge/queue"
	"github.com/delaybridge/delaybridge/sinks"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testRedis connects to the test Redis (internal/testing/redistest) and returns a
// unique key prefix whose keys are deleted after the test.
func testRedis(t *testing.T) (*queue.Queue, string) {
	t.Helper()
	mustSayRedis(t)
	rdb, prefix := redistest.New(t)
	return queue.New(rdb), prefix
}

// proxiedRedis is a client of the test Redis through a fault proxy (for
// stalls and cuts), both closed at the end; tune, if not nil, changes the
// client's options first.
func proxiedRedis(t *testing.T, tune func(*redis.Options)) (*faultproxy.Proxy, *redis.Client) {
	t.Helper()
	mustSayRedis(t)
	opt := redistest.Options(t)
	proxy, err := faultproxy.New(context.Background(), opt.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	opt.Addr = proxy.Addr()
	if tune != nil {
		tune(opt)
	}
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { rdb.Close() })
	return proxy, rdb
}

// mustSayRedis fails a test that needs a live Redis unless its file says so
// in its name (x_redis_test.go): the forwarder's other tests run against
// fakes (slotstore_test.go's store, recordSink) with no server at all.
func mustSayRedis(t *testing.T) {
	t.Helper()
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	for {
		f, more := frames.Next()
		// "…/forwarder.TestX.func1": a subtest's closure is in its test's file.
		_, name, _ := strings.Cut(f.Function[strings.LastIndex(f.Function, "/")+1:], ".")
		if strings.HasPrefix(name, "Test") || strings.HasPrefix(name, "Benchmark") || strings.HasPrefix(name, "Fuzz") {
			if !strings.HasSuffix(f.File, "_redis_test.go") {
				t.Fatalf("%s needs a live Redis: its file %s must say so (x_redis_test.go)", name, filepath.Base(f.File))
			}
			return
		}
		if !more {
			return
		}
	}
}

// published is one message a recordSink confirmed, with the local time.
type published struct {
	msg sinks.Message
	at  time.Time
}

// recordSink is a sink under the test's control: it confirms by default and
// fails as fail says. It exercises the forwarder's decisions; the real
// brokers are exercised by the sinks' own tests and end to end.
type recordSink struct {
	mu        sync.Mutex
	got       []published
	fail      func(m sinks.Message) error // nil: confirm
	connected bool
	block     bool          // Publish waits for ctx to end
	delay     time.Duration // Publish takes this long before answering
	calls     int
}

func newRecordSink() *recordSink { return &recordSink{connected: true} }

func (s *recordSink) Publish(ctx context.Context, msgs []sinks.Message) error {
	s.mu.Lock()
	s.calls++
	block, connected, delay := s.block, s.connected, s.delay
	s.mu.Unlock()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if block {
		<-ctx.Done()
		return ctx.Err()
	}
	if !connected {
		return sinks.NotConnected(os.ErrDeadlineExceeded)
	}
	errs := make([]error, len(msgs))
	failed := false
	now := time.Now()
	s.mu.Lock()
	for i, m := range msgs {
		if s.fail != nil {
			errs[i] = s.fail(m)
		}
		if errs[i] != nil {
			failed = true
			continue
		}
		s.got = append(s.got, published{m, now})
	}
	s.mu.Unlock()
	if failed {
		return &sinks.BatchError{Errs: errs}
	}
	return nil
}

func (s *recordSink) Ping(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.connected {
		return sinks.ErrNotConnected
	}
	return nil
}

func (s *recordSink) Close() error { return nil }

func (s *recordSink) set(fn func(s *recordSink)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(s)
}

func (s *recordSink) published() []published {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]published(nil), s.got...)
}

// start runs a forwarder until the test ends (or stop is called) and
// returns stop, which waits for Run to return and its error.
func start(t *testing.T, opt Options) (stop func() error) {
	t.Helper()
	_, stop = startF(t, opt, nil)
	return stop
}

// startF is start that returns the forwarder too; before, if not nil, is
// called before Run (to set a service's test signal).
func startF(t *testing.T, opt Options, before func(*Forwarder)) (*Forwarder, func() error) {
	t.Helper()
	if opt.Metrics == nil {
		opt.Metrics = NewMetrics(prometheus.NewRegistry())
	}
	f, err := New(opt)
	if err != nil {
		t.Fatalf("new forwarder: %v", err)
	}
	if before != nil {
		before(f)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	var once sync.Once
	var runErr error
	stop := func() error {
		once.Do(func() {
			cancel()
			select {
			case runErr = <-done:
			case <-time.After(30 * time.Second):
				t.Errorf("forwarder did not stop within 30 s")
			}
		})
		return runErr
	}
	t.Cleanup(func() { stop() })
	return f, stop
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", within, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// keysLeft counts the keys left under prefix.
func keysLeft(t *testing.T, q *queue.Queue, prefix string) []string {
	t.Helper()
	keys, err := q.Client().Keys(context.Background(), prefix+"*").Result()
	if err != nil {
		t.Fatalf("keys: %v", err)
	}
	var out []string
	for _, k := range keys {
		// The replica set and what each replica forwards live with the
		// daemons, not with the messages.
		if !strings.HasSuffix(k, ":replicas") && !strings.HasSuffix(k, ":replicas:topics") {
			out = append(out, k)
		}
	}
	return out
}
