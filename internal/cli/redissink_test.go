package cli

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/config"
	"github.com/delaybridge/delaybridge/internal/testing/redistest"
	"github.com/delaybridge/delaybridge/sinks"
)

// redisSinkEnv configures one topic, "events", that appends to a stream of
// the test's own on the test Redis, and returns the stream key.
func redisSinkEnv(t *testing.T) (*redis.Client, string) {
	t.Helper()
	rdb, prefix := redistest.New(t)
	stream := prefix + ":stream"
	t.Setenv("DELAYBRIDGE_REDIS_URL", redistest.URL())
	t.Setenv("DELAYBRIDGE_AMQP_URL", "")
	t.Setenv("DELAYBRIDGE_TOPICS", "events")
	t.Setenv("DELAYBRIDGE_TOPIC_EVENTS_SINK", "redis")
	t.Setenv("DELAYBRIDGE_TOPIC_EVENTS_STREAM", stream)
	return rdb, stream
}

func TestCheckPingsARedisStreamSink(t *testing.T) {
	redisSinkEnv(t)
	var out, errb bytes.Buffer
	code := dispatch(context.Background(), []string{"check"}, stdio{in: strings.NewReader(""), out: &out, err: &errb})
	if code != exitOK || !strings.Contains(out.String(), "topic events (redis): ok") {
		t.Fatalf("check: exit %d\nstdout: %s\nstderr: %s", code, out.String(), errb.String())
	}
}

func TestRedisSinkWithoutStreamIsAConfigError(t *testing.T) {
	redisSinkEnv(t)
	t.Setenv("DELAYBRIDGE_TOPIC_EVENTS_STREAM", "")
	var out, errb bytes.Buffer
	code := dispatch(context.Background(), []string{"check"}, stdio{in: strings.NewReader(""), out: &out, err: &errb})
	if code != exitConfig || !strings.Contains(out.String()+errb.String(), "DELAYBRIDGE_TOPIC_EVENTS_STREAM") {
		t.Fatalf("check: exit %d, want %d naming the variable\nstdout: %s\nstderr: %s", code, exitConfig, out.String(), errb.String())
	}
}

func TestBuildSinksAppendsToTheTopicStream(t *testing.T) {
	rdb, stream := redisSinkEnv(t)
	t.Setenv("DELAYBRIDGE_TOPIC_EVENTS_STREAM_MAXLEN", "1000")
	cfg, err := config.Load()
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	topics, closeAll, err := buildSinks(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatalf("buildSinks: %v", err)
	}
	defer closeAll()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	msg := sinks.Message{ID: "m1", Topic: "events", Body: []byte("hello"), Due: time.UnixMilli(1_764_000_000_000), Attempt: 1}
	if err := topics[0].Sink.Publish(ctx, []sinks.Message{msg}); err != nil {
		t.Fatalf("publish: %v", err)
	}
	got, err := rdb.XRange(ctx, stream, "-", "+").Result()
	if err != nil || len(got) != 1 {
		t.Fatalf("XRANGE = %v, %v; want one entry", got, err)
	}
	if v := got[0].Values; v["id"] != "m1" || v["body"] != "hello" || v["due"] != "1764000000000" {
		t.Errorf("entry %v", v)
	}
}
