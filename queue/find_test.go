package queue

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/internal/testing/redistest"
)

func TestFindMessageIDFindsAMemberWithoutItsBytes(t *testing.T) {
	rdb := redistest.Connect(t)
	prefix := redistest.Prefix(t, rdb)
	q := New(rdb)
	topic := Topic{Name: "orders", Prefix: prefix, Slots: 1}
	ctx := context.Background()
	for _, m := range []string{"a", "b", "c"} {
		if err := rdb.ZAdd(ctx, topic.Keys(0).Scheduled, redisZ(float64(time.Now().Add(time.Hour).UnixMilli()), m)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	e, err := q.FindMessageID(ctx, topic, 0, MessageID([]byte("b")))
	if err != nil || e.Member != "b" || e.State != "scheduled" {
		t.Fatalf("FindMessageID(b) = %+v, %v; want b scheduled", e, err)
	}
	_, err = q.FindMessageID(ctx, topic, 0, MessageID([]byte("zz")))
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("FindMessageID(absent) error = %v, want ErrNotFound", err)
	}
}
