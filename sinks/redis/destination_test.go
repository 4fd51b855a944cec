package redis

import (
	"context"
	"errors"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/sinks"
)

// TestCheckDestinationWantsAbsentKeyOrStream: an absent key and a stream
// pass; a key of another type fails with ErrNoDestination naming it.
func TestCheckDestinationWantsAbsentKeyOrStream(t *testing.T) {
	admin := adminClient(t)
	ctx := context.Background()
	stream := uniqueStream(t, admin)
	s := openSink(t, testOptions(t), Config{Stream: stream})
	if err := s.CheckDestination(ctx); err != nil {
		t.Fatalf("absent key: %v", err)
	}
	if err := admin.XAdd(ctx, &goredis.XAddArgs{Stream: stream, Values: []string{"f", "v"}}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckDestination(ctx); err != nil {
		t.Fatalf("a stream: %v", err)
	}
	admin.Del(ctx, stream)
	admin.Set(ctx, stream, "x", 0)
	err := s.CheckDestination(ctx)
	if !errors.Is(err, sinks.ErrNoDestination) || !strings.Contains(err.Error(), stream) || !strings.Contains(err.Error(), "string") {
		t.Errorf("a string key: %v, want ErrNoDestination naming the key and its type", err)
	}
}
