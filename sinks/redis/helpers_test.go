package redis

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/delaybridge/delaybridge/internal/testing/redistest"
	"github.com/delaybridge/delaybridge/sinks"
	"github.com/delaybridge/delaybridge/sinks/sinktest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func testOptions(t *testing.T) *goredis.UniversalOptions {
	t.Helper()
	o := redistest.Options(t)
	return &goredis.UniversalOptions{
		Addrs:                 []string{o.Addr},
		DB:                    o.DB,
		Username:              o.Username,
		Password:              o.Password,
		TLSConfig:             o.TLSConfig,
		ContextTimeoutEnabled: true,
	}
}

// adminClient is the test's own client, to inspect and clean up. A missing
// Redis fails the test.
func adminClient(t *testing.T) goredis.UniversalClient { return redistest.Connect(t) }

// uniqueStream is a fresh key, deleted when the test ends.
func uniqueStream(t *testing.T, admin goredis.UniversalClient) string {
	return redistest.Prefix(t, admin) + ":stream"
}

// openSink is a sink with a client of its own, closed when the test ends.
func openSink(t *testing.T, opts *goredis.UniversalOptions, cfg Config) *Sink {
	t.Helper()
	s, err := Open(opts, cfg, nil)
	if err != nil {
		t.Fatalf("open sink: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// entries reads the whole stream.
func entries(t *testing.T, admin goredis.UniversalClient, stream string) []goredis.XMessage {
	t.Helper()
	msgs, err := admin.XRange(context.Background(), stream, "-", "+").Result()
	if err != nil {
		t.Fatalf("XRANGE %s: %v", stream, err)
	}
	return msgs
}

// reader returns what sinktest reads: n entries of stream, in order,
// within timeout.
func reader(admin goredis.UniversalClient, stream string) func(t *testing.T, n int, timeout time.Duration) []sinktest.Received {
	return func(t *testing.T, n int, timeout time.Duration) []sinktest.Received {
		t.Helper()
		deadline := time.Now().Add(timeout)
		var got []goredis.XMessage
		for {
			got = entries(t, admin, stream)
			if len(got) >= n || time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if len(got) != n {
			t.Fatalf("stream %s has %d entries, want %d", stream, len(got), n)
		}
		out := make([]sinktest.Received, len(got))
		for i, e := range got {
			out[i] = received(t, e)
		}
		return out
	}
}

// received is how a consumer sees entry e: the delaybridge fields also as
// the x-delaybridge-* headers other sinks send, so the suite can compare.
func received(t *testing.T, e goredis.XMessage) sinktest.Received {
	t.Helper()
	str := func(k string) string {
		v, _ := e.Values[k].(string)
		return v
	}
	due, err := strconv.ParseInt(str(FieldDue), 10, 64)
	if err != nil {
		t.Fatalf("entry %s: due %q: %v", e.ID, str(FieldDue), err)
	}
	attempt, err := strconv.Atoi(str(FieldAttempt))
	if err != nil {
		t.Fatalf("entry %s: attempt %q: %v", e.ID, str(FieldAttempt), err)
	}
	h := map[string]string{
		sinks.HeaderID:      str(FieldID),
		sinks.HeaderTopic:   str(FieldTopic),
		sinks.HeaderDue:     str(FieldDue),
		sinks.HeaderAttempt: str(FieldAttempt),
	}
	for k, v := range e.Values {
		if name, ok := strings.CutPrefix(k, HeaderPrefix); ok {
			h[name], _ = v.(string)
		}
	}
	return sinktest.Received{
		Body:       []byte(str(FieldBody)),
		ID:         str(FieldID),
		Topic:      str(FieldTopic),
		Due:        due,
		Attempt:    attempt,
		Headers:    h,
		RoutingKey: str(FieldRoutingKey),
	}
}
