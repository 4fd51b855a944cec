package queue

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/internal/testing/redistest"
)

func TestWakesDeliversParsedWakeUpsAndClosesWhenCtxEnds(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.New(t)
	q := New(rdb)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wakes := q.Wakes(ctx, prefix)

	want := Wake{Topic: "orders", Slot: 3, Score: 1764000000000.5}
	// The subscription starts in the background: publish until it hears.
	var got Wake
	deadline := time.After(5 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
wait:
	for {
		select {
		case got = <-wakes:
			break wait
		case <-tick.C:
			rdb.Publish(ctx, WakeChannel(prefix), want.Payload())
		case <-deadline:
			t.Fatal("no wake-up within 5s")
		}
	}
	if got != want {
		t.Fatalf("wake-up %+v, want %+v", got, want)
	}
	// A malformed payload is dropped; one without a usable score still names
	// its slot, due at once.
	rdb.Publish(ctx, WakeChannel(prefix), "no slot")
	rdb.Publish(ctx, WakeChannel(prefix), "orders\n5\nsoon")
	for w := range wakes {
		if w == want {
			continue // a late copy of the first announcement
		}
		if w.Topic != "orders" || w.Slot != 5 || !math.IsInf(w.Score, -1) {
			t.Fatalf("wake-up %+v, want orders slot 5 at -Inf", w)
		}
		break
	}

	cancel()
	closed := make(chan struct{})
	go func() {
		for range wakes {
		}
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Wakes did not close its channel after ctx ended")
	}
}
