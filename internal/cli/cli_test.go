package cli

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/delaybridge/delaybridge/internal/testing/redistest"
	"github.com/delaybridge/delaybridge/queue"
)

// TestMain clears the DELAYBRIDGE_* variables the shell or CI passed in:
// the tests configure the command through them, and one left over (a
// developer's DELAYBRIDGE_TOPICS) would change what a test runs or, as an
// unused variable, add a warning a test does not expect.
func TestMain(m *testing.M) {
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "DELAYBRIDGE_") {
			os.Unsetenv(name)
		}
	}
	goleak.VerifyTestMain(m)
}

// The command tests set DELAYBRIDGE_* variables (t.Setenv), so they do not
// run in parallel.

// cliEnv configures two topics under a key prefix of the test's own:
// "orders" (envelope, 4 slots) and "legacy" (raw, 1 slot).
type cliEnv struct {
	t      *testing.T
	ctx    context.Context
	rdb    *redis.Client
	q      *queue.Queue
	orders queue.Topic
	legacy queue.Topic
}

func newCLIEnv(t *testing.T) *cliEnv {
	t.Helper()
	rdb, prefix := redistest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	t.Setenv("DELAYBRIDGE_REDIS_URL", redistest.URL())
	t.Setenv("DELAYBRIDGE_KEY_PREFIX", prefix)
	t.Setenv("DELAYBRIDGE_TOPICS", "orders,legacy")
	t.Setenv("DELAYBRIDGE_TOPIC_ORDERS_FORMAT", "envelope")
	t.Setenv("DELAYBRIDGE_TOPIC_ORDERS_SLOTS", "4")
	return &cliEnv{
		t: t, ctx: ctx, rdb: rdb, q: queue.New(rdb),
		orders: queue.Topic{Name: "orders", Prefix: prefix, Slots: 4, Format: queue.FormatEnvelope},
		legacy: queue.Topic{Name: "legacy", Prefix: prefix, Slots: 1, Format: queue.FormatRaw},
	}
}

// run runs the command line through dispatch with stdin.
func (e *cliEnv) run(stdin string, args ...string) (code int, stdout, stderr string) {
	e.t.Helper()
	var out, errb bytes.Buffer
	code = dispatch(e.ctx, args, stdio{in: strings.NewReader(stdin), out: &out, err: &errb})
	return code, out.String(), errb.String()
}

// mustRun runs a command that must exit 0.
func (e *cliEnv) mustRun(stdin string, args ...string) string {
	e.t.Helper()
	code, out, errs := e.run(stdin, args...)
	if code != exitOK {
		e.t.Fatalf("%v: exit %d\nstdout: %s\nstderr: %s", args, code, out, errs)
	}
	return out
}

// kill schedules an envelope or raw message on t and dead-letters it.
func (e *cliEnv) kill(t queue.Topic, m queue.Message, reason string) queue.Receipt {
	e.t.Helper()
	r, err := e.q.Schedule(e.ctx, t, m, queue.In(-time.Second))
	if err != nil {
		e.t.Fatal(err)
	}
	c, err := e.q.Claim(e.ctx, t, r.Slot, 100, time.Minute)
	if err != nil || len(c.Messages) == 0 {
		e.t.Fatalf("Claim = %+v, %v", c, err)
	}
	for _, cm := range c.Messages {
		if _, err := e.q.Retry(e.ctx, t, r.Slot, queue.Failure{Member: cm.Member, Permanent: true, Reason: reason}, 10); err != nil {
			e.t.Fatal(err)
		}
	}
	return r
}

// syncBuffer is a bytes.Buffer safe for a command writing while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var _ io.Writer = (*syncBuffer)(nil)

func TestEveryProducerCommandPrintsHelp(t *testing.T) {
	for _, args := range [][]string{
		{"schedule", "--help"}, {"cancel", "-h"}, {"reschedule", "--help"}, {"stats", "--help"},
		{"dead", "--help"}, {"dead", "list", "--help"}, {"dead", "requeue", "--help"}, {"dead", "purge", "-help"},
	} {
		var out, errb bytes.Buffer
		code := dispatch(context.Background(), args, stdio{in: strings.NewReader(""), out: &out, err: &errb})
		if code != exitOK || !strings.Contains(out.String(), "usage: delaybridge "+args[0]) {
			t.Errorf("%v: exit %d, stdout %q", args, code, out.String())
		}
		if args[0] != "dead" || len(args) > 2 {
			if !strings.Contains(out.String(), "-json") {
				t.Errorf("%v: help does not list --json:\n%s", args, out.String())
			}
		}
	}
	var out bytes.Buffer
	dispatch(context.Background(), []string{"help"}, stdio{out: &out, err: io.Discard})
	for _, name := range []string{"schedule", "cancel", "reschedule", "stats", "dead"} {
		if !strings.Contains(out.String(), "  "+name+" ") {
			t.Errorf("delaybridge help does not list %s:\n%s", name, out.String())
		}
	}
}

func TestProducerCommandsExit2OnBadConfiguration(t *testing.T) {
	newCLIEnv(t)
	t.Setenv("DELAYBRIDGE_TOPIC_ORDERS_SLOTS", "3")
	for _, args := range [][]string{{"schedule", "orders", "x"}, {"stats"}, {"dead", "list"}, {"cancel", "orders", "--id", "a"}} {
		var out, errb bytes.Buffer
		code := dispatch(context.Background(), args, stdio{in: strings.NewReader(""), out: &out, err: &errb})
		if code != exitConfig || !strings.Contains(errb.String(), "DELAYBRIDGE_TOPIC_ORDERS_SLOTS") {
			t.Errorf("%v: exit %d, stderr %q; want 2 naming the variable", args, code, errb.String())
		}
	}
}

func TestShortDurationUsesAtMostTwoUnits(t *testing.T) {
	for d, want := range map[time.Duration]string{
		120 * time.Millisecond:                                 "120ms",
		2500 * time.Millisecond:                                "2.5s",
		59*time.Minute + 59*time.Second + 999*time.Millisecond: "1h0m",
		3*time.Minute + 2*time.Second:                          "3m2s",
		4*time.Hour + 3*time.Minute:                            "4h3m",
		76 * time.Hour:                                         "3d4h",
		-90 * time.Second:                                      "1m30s",
	} {
		if got := shortDuration(d); got != want {
			t.Errorf("shortDuration(%v) = %q, want %q", d, got, want)
		}
	}
}
