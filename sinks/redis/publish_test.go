package redis

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	goredis "github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/internal/testing/faultproxy"
	"github.com/delaybridge/delaybridge/sinks"
	"github.com/delaybridge/delaybridge/sinks/sinktest"
)

func publish(t *testing.T, s *Sink, msgs []sinks.Message) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return s.Publish(ctx, msgs)
}

// refusal checks that err is Redis's answer about one message: it counts as
// an attempt, neither permanent nor a connection failure.
func refusal(t *testing.T, what string, err error, text string) {
	t.Helper()
	switch {
	case err == nil:
		t.Errorf("%s: confirmed, want Redis's refusal %s", what, text)
	case errors.Is(err, sinks.ErrPermanent), errors.Is(err, sinks.ErrNotConnected):
		t.Errorf("%s: %v, want a refusal that counts as an attempt", what, err)
	case !strings.Contains(err.Error(), text):
		t.Errorf("%s: %v, want %s", what, err, text)
	}
}

func TestWrongTypeKeyFailsEveryMessageAsAnAttempt(t *testing.T) {
	t.Parallel()
	admin := adminClient(t)
	stream := uniqueStream(t, admin)
	if err := admin.Set(context.Background(), stream, "not a stream", 0).Err(); err != nil {
		t.Fatal(err)
	}
	s := openSink(t, testOptions(t), Config{Stream: stream, MaxMessageSize: 1024})
	msgs := sinktest.Messages(3)
	msgs[1].Body = bytes.Repeat([]byte("x"), 1025)

	err := publish(t, s, msgs)
	var be *sinks.BatchError
	if !errors.As(err, &be) || len(be.Errs) != len(msgs) {
		t.Fatalf("publish to a string key: %v, want a *sinks.BatchError of %d", err, len(msgs))
	}
	refusal(t, "message 0", be.Errs[0], "WRONGTYPE")
	if !errors.Is(be.Errs[1], sinks.ErrPermanent) {
		t.Errorf("oversized message: %v, want sinks.ErrPermanent", be.Errs[1])
	}
	refusal(t, "message 2", be.Errs[2], "WRONGTYPE")
	// The key is wrong, not Redis: the forwarder may go on claiming.
	if err := s.Ping(context.Background()); err != nil {
		t.Errorf("ping after WRONGTYPE: %v", err)
	}

	// Once the operator fixes the key, the retry goes through.
	if err := admin.Del(context.Background(), stream).Err(); err != nil {
		t.Fatal(err)
	}
	if err := publish(t, s, []sinks.Message{msgs[0], msgs[2]}); err != nil {
		t.Fatalf("publish after the key was deleted: %v", err)
	}
	sinktest.CheckReceived(t, []sinks.Message{msgs[0], msgs[2]}, reader(admin, stream)(t, 2, time.Second))
}

// TestRefusedAppendFailsAloneInItsPipeline sends one pipeline whose middle
// XADD goes to a string key: only that message fails, the others of the
// same round trip are confirmed.
func TestRefusedAppendFailsAloneInItsPipeline(t *testing.T) {
	t.Parallel()
	admin := adminClient(t)
	stream, wrong := uniqueStream(t, admin), uniqueStream(t, admin)
	if err := admin.Set(context.Background(), wrong, "not a stream", 0).Err(); err != nil {
		t.Fatal(err)
	}
	s := openSink(t, testOptions(t), Config{Stream: stream})
	msgs := sinktest.Messages(3)
	args := make([]*goredis.XAddArgs, len(msgs))
	for i := range msgs {
		args[i] = s.xadd(&msgs[i])
	}
	args[1].Stream = wrong
	errs := make([]error, len(msgs))
	if err := s.appendAll(context.Background(), msgs, args, []int{0, 1, 2}, errs); err != nil {
		t.Fatalf("appendAll: %v", err)
	}
	if errs[0] != nil || errs[2] != nil {
		t.Errorf("messages 0 and 2 failed: %v, %v", errs[0], errs[2])
	}
	refusal(t, "message 1", errs[1], "WRONGTYPE")
	sinktest.CheckReceived(t, []sinks.Message{msgs[0], msgs[2]}, reader(admin, stream)(t, 2, time.Second))
}

func TestUnreachableRedisIsNotConnected(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now

	s := openSink(t, &goredis.UniversalOptions{Addrs: []string{addr}, DialTimeout: time.Second, MaxRetries: -1},
		Config{Stream: "delaybridge-test:redissink:unreachable"})
	err = publish(t, s, sinktest.Messages(3))
	var be *sinks.BatchError
	if !errors.Is(err, sinks.ErrNotConnected) || errors.As(err, &be) {
		t.Errorf("publish to a closed port: %v, want one error wrapping sinks.ErrNotConnected", err)
	}
	if err := s.Ping(context.Background()); !errors.Is(err, sinks.ErrNotConnected) {
		t.Errorf("ping of a closed port: %v, want sinks.ErrNotConnected", err)
	}
}

func TestCutConnectionIsNotConnectedAndRecovers(t *testing.T) {
	t.Parallel()
	admin := adminClient(t)
	stream := uniqueStream(t, admin)
	o := testOptions(t)
	p, err := faultproxy.New(context.Background(), o.Addrs[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	o.Addrs, o.DialTimeout, o.MaxRetries = []string{p.Addr()}, time.Second, -1
	s := openSink(t, o, Config{Stream: stream})

	first := sinktest.Messages(2)
	if err := publish(t, s, first); err != nil {
		t.Fatalf("publish through the proxy: %v", err)
	}
	p.Cut()
	if err := publish(t, s, sinktest.Messages(2)); !errors.Is(err, sinks.ErrNotConnected) {
		t.Errorf("publish while cut: %v, want sinks.ErrNotConnected", err)
	}
	if err := s.Ping(context.Background()); !errors.Is(err, sinks.ErrNotConnected) {
		t.Errorf("ping while cut: %v, want sinks.ErrNotConnected", err)
	}
	p.Restore()
	time.Sleep(holdFor) // Ping holds the failure that long
	if err := s.Ping(context.Background()); err != nil {
		t.Errorf("ping after restore: %v", err)
	}
	again := sinktest.Messages(2)
	if err := publish(t, s, again); err != nil {
		t.Fatalf("publish after restore: %v", err)
	}
	sinktest.CheckReceived(t, append(first, again...), reader(admin, stream)(t, 4, time.Second))
}

func TestMaxLenTrimsTheStream(t *testing.T) {
	t.Parallel()
	const batches, perBatch = 5, 100
	for _, tc := range []struct {
		maxLen   int64
		min, max int64 // XLEN after batches*perBatch appends
	}{
		{maxLen: 0, min: batches * perBatch, max: batches * perBatch},
		// "~" trims whole radix-tree nodes (stream-node-max-entries,
		// 100 by default): the stream keeps at least maxLen entries and
		// less than a node more.
		{maxLen: 10, min: 10, max: 10 + 100},
	} {
		t.Run(fmt.Sprint("maxlen=", tc.maxLen), func(t *testing.T) {
			admin := adminClient(t)
			stream := uniqueStream(t, admin)
			s := openSink(t, testOptions(t), Config{Stream: stream, MaxLen: tc.maxLen})
			var last sinks.Message
			for range batches {
				msgs := sinktest.Messages(perBatch)
				if err := publish(t, s, msgs); err != nil {
					t.Fatalf("publish: %v", err)
				}
				last = msgs[len(msgs)-1]
			}
			n, err := admin.XLen(context.Background(), stream).Result()
			if err != nil {
				t.Fatal(err)
			}
			if n < tc.min || n > tc.max {
				t.Errorf("XLEN = %d, want %d to %d", n, tc.min, tc.max)
			}
			// Trimming drops the oldest entries, never the newest.
			got := entries(t, admin, stream)
			sinktest.CheckReceived(t, []sinks.Message{last}, []sinktest.Received{received(t, got[len(got)-1])})
		})
	}
}

func TestEntryFieldsRoundTrip(t *testing.T) {
	t.Parallel()
	admin := adminClient(t)
	stream := uniqueStream(t, admin)
	s := openSink(t, testOptions(t), Config{Stream: stream})
	due := time.UnixMilli(1_764_000_000_123)
	msgs := []sinks.Message{
		{ID: "raw", Topic: "orders", Body: []byte("\x00binary\xff"), Due: due, Attempt: 1},
		{
			ID: "env", Topic: "orders", Body: []byte(`{"a":1}`), Due: due, Attempt: 3, RoutingKey: "orders.eu",
			// Names of delaybridge's own fields, and the prefix itself,
			// cannot shadow anything behind the prefix.
			Headers: map[string]string{"id": "forged", "body": "b", "h:x": "y", "content-type": "application/json", "with space": ""},
		},
	}
	if err := publish(t, s, msgs); err != nil {
		t.Fatalf("publish: %v", err)
	}
	got := entries(t, admin, stream)
	if len(got) != 2 {
		t.Fatalf("%d entries, want 2", len(got))
	}
	want := []map[string]any{
		{"id": "raw", "topic": "orders", "due": "1764000000123", "attempt": "1", "body": "\x00binary\xff"},
		{
			"id": "env", "topic": "orders", "due": "1764000000123", "attempt": "3", "body": `{"a":1}`,
			"routing_key": "orders.eu",
			"h:id":        "forged", "h:body": "b", "h:h:x": "y", "h:content-type": "application/json", "h:with space": "",
		},
	}
	for i := range want {
		if diff := cmp.Diff(want[i], got[i].Values); diff != "" {
			t.Errorf("entry %d fields (-want +got):\n%s", i, diff)
		}
	}
	// Fixed fields first, headers in name order: consumers may rely on it.
	raw, err := admin.Do(context.Background(), "XRANGE", stream, got[1].ID, got[1].ID).Slice()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for i, v := range raw[0].([]any)[1].([]any) {
		if i%2 == 0 {
			names = append(names, v.(string))
		}
	}
	wantNames := []string{"id", "topic", "due", "attempt", "body", "routing_key", "h:body", "h:content-type", "h:h:x", "h:id", "h:with space"}
	if diff := cmp.Diff(wantNames, names); diff != "" {
		t.Errorf("field order (-want +got):\n%s", diff)
	}
}

// TestReplyErrorsAreClassified feeds classify real reply errors (a Lua
// script answers with each) and transport errors.
func TestReplyErrorsAreClassified(t *testing.T) {
	t.Parallel()
	o := testOptions(t)
	o.MaxRetries = -1 // go-redis retries LOADING, READONLY, …: show them as they come
	c := goredis.NewUniversalClient(o)
	t.Cleanup(func() { _ = c.Close() })
	reply := func(text string) error {
		err := c.Eval(context.Background(), "return redis.error_reply(ARGV[1])", nil, text).Err()
		if err == nil {
			t.Fatalf("script answered %q without an error", text)
		}
		return err
	}
	const (
		attempt = iota
		connection
	)
	for _, tc := range []struct {
		err  error
		want int
	}{
		{reply("WRONGTYPE Operation against a key holding the wrong kind of value"), attempt},
		{reply("NOPERM User app has no permissions to access the 'events' key"), attempt},
		{reply("ERR something about the command"), attempt},
		{reply("OOM command not allowed when used memory > 'maxmemory'."), connection},
		{reply("LOADING Redis is loading the dataset in memory"), connection},
		{reply("READONLY You can't write against a read only replica."), connection},
		{reply("MASTERDOWN Link with MASTER is down"), connection},
		{reply("CLUSTERDOWN The cluster is down"), connection},
		{reply("TRYAGAIN Multiple keys request during rehashing of slot"), connection},
		{reply("NOAUTH Authentication required."), connection},
		{&net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")}, connection},
		{fmt.Errorf("read: %w", errors.New("EOF")), connection},
	} {
		s, err := New(c, Config{Stream: "delaybridge-test:redissink:classify"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		m := &sinks.Message{ID: "m1"}
		got := s.classify(m, tc.err)
		held := s.Ping(context.Background())
		switch tc.want {
		case attempt:
			refusal(t, tc.err.Error(), got, strings.Fields(tc.err.Error())[0])
			if held != nil {
				t.Errorf("%v: Ping then fails: %v", tc.err, held)
			}
		case connection:
			if !errors.Is(got, sinks.ErrNotConnected) {
				t.Errorf("%v: classified %v, want sinks.ErrNotConnected", tc.err, got)
			}
			if !errors.Is(held, sinks.ErrNotConnected) {
				t.Errorf("%v: Ping then says %v, want it to hold the failure", tc.err, held)
			}
		}
		_ = s.Close()
	}
	// go-redis's own client closed under the sink: the sink is closing.
	s, _ := New(c, Config{Stream: "delaybridge-test:redissink:classify"}, nil)
	defer s.Close()
	if err := s.classify(&sinks.Message{ID: "m1"}, goredis.ErrClosed); !errors.Is(err, sinks.ErrClosed) || !errors.Is(err, sinks.ErrNotConnected) {
		t.Errorf("client closed: classified %v, want sinks.ErrClosed and sinks.ErrNotConnected", err)
	}
}

func TestCloseLeavesAGivenClientOpen(t *testing.T) {
	t.Parallel()
	admin := adminClient(t)
	stream := uniqueStream(t, admin)
	s, err := New(admin, Config{Stream: stream}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := publish(t, s, sinktest.Messages(1)); !errors.Is(err, sinks.ErrClosed) {
		t.Errorf("publish after close: %v, want sinks.ErrClosed", err)
	}
	if err := admin.Ping(context.Background()).Err(); err != nil {
		t.Errorf("the caller's client after Close: %v", err)
	}
}

func TestConfigReportsEveryProblem(t *testing.T) {
	err := Config{Stream: " ", MaxLen: -1, MaxMessageSize: LimitMaxMessageSize + 1}.Validate()
	for _, want := range []string{"no stream key", "max length -1", "max message size"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v, want it to mention %q", err, want)
		}
	}
	if err := (Config{Stream: "events"}).Validate(); err != nil {
		t.Errorf("Validate of a minimal config: %v", err)
	}
}
