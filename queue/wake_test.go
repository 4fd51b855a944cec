package queue

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

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
			if got.Subscribed {
				continue
			}
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
		if w == want || w.Subscribed {
			continue // a late copy of the first announcement, or a resubscription
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

// TestWakesSaysEachTimeItSubscribes: a wake-up published while Wakes was
// not subscribed is lost, so each subscription, the first and every one
// made again after the connection dropped, is announced: a listener then
// looks at every slot.
func TestWakesSaysEachTimeItSubscribes(t *testing.T) {
	t.Parallel()
	shared, prefix := redistest.New(t)
	name := "wakes-" + strings.ReplaceAll(prefix, ":", "-")
	rdb := redis.NewClient(&redis.Options{Addr: shared.Options().Addr, ClientName: name})
	defer rdb.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wakes := New(rdb).Wakes(ctx, prefix)
	subscribed := func(what string) {
		t.Helper()
		select {
		case w := <-wakes:
			if !w.Subscribed || !math.IsInf(w.Score, -1) {
				t.Fatalf("%s: wake-up %+v, want Subscribed at -Inf", what, w)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: no Subscribed wake-up within 5s", what)
		}
	}
	subscribed("first subscription")

	// Drop the subscription's connection: it is made again, and said so.
	list, err := shared.ClientList(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	killed := 0
	for _, line := range strings.Split(list, "\n") {
		if !strings.Contains(line, " name="+name+" ") || !strings.Contains(line, " sub=1 ") {
			continue
		}
		id, _, _ := strings.Cut(strings.TrimPrefix(line, "id="), " ")
		if err := shared.Do(ctx, "CLIENT", "KILL", "ID", id).Err(); err != nil {
			t.Fatal(err)
		}
		killed++
	}
	if killed != 1 {
		t.Fatalf("found %d subscribed connections named %s, want 1:\n%s", killed, name, list)
	}
	subscribed("after the connection dropped")
	want := Wake{Topic: "orders", Slot: 1, Score: 5}
	if err := shared.Publish(ctx, WakeChannel(prefix), want.Payload()).Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-wakes:
		if got != want {
			t.Fatalf("wake-up %+v, want %+v", got, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no wake-up within 5s of the subscription made again")
	}
}
