package queue

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/internal/backoff"
)

// WakeChannel is the Pub/Sub channel, "<prefix>:wake", on which every
// successful schedule, reschedule or requeue announces its due time, so a
// scanner sleeping until a later message can look again at once. The payload
// is "<topic>\n<slot>\n<score>" (see Wake). Wake-ups are hints: a lost one only
// delays a message until the scanner's next poll.
func WakeChannel(prefix string) string {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return prefix + ":wake"
}

// Wake is one wake-up: slot Slot of topic Topic holds a message due at Score
// (Unix ms); or, with Subscribed, the subscription was made (again) and
// names no slot: wake-ups published before it may have been missed, so every
// slot may hold a message due now.
type Wake struct {
	Topic      string
	Slot       int
	Score      float64
	Subscribed bool
}

// Payload is the wake-up as published.
func (w Wake) Payload() string {
	return w.Topic + "\n" + strconv.Itoa(w.Slot) + "\n" + strconv.FormatFloat(w.Score, 'f', -1, 64)
}

// ErrWakeScore is wrapped by ParseWake's error when a payload names a topic
// and slot but no score that reads as one (missing, not a number, NaN).
var ErrWakeScore = errors.New("wake-up without a usable score")

// ParseWake reads a payload published on WakeChannel. When only the score
// is unusable the error wraps ErrWakeScore and the Wake still names the
// slot, with Score -Inf: a scanner may look at once (a wake-up is a hint;
// looking early never delivers early).
func ParseWake(payload string) (Wake, error) {
	topic, rest, ok := strings.Cut(payload, "\n")
	if topic == "" || !ok {
		return Wake{}, fmt.Errorf("parse wake-up %q: want <topic>\\n<slot>\\n<score>", payload)
	}
	slotText, scoreText, _ := strings.Cut(rest, "\n")
	slot, err := strconv.Atoi(slotText)
	if err != nil || slot < 0 {
		return Wake{}, fmt.Errorf("parse wake-up %q: bad slot", payload)
	}
	w := Wake{Topic: topic, Slot: slot, Score: math.Inf(-1)}
	score, err := strconv.ParseFloat(scoreText, 64)
	switch {
	case err != nil:
		return w, fmt.Errorf("parse wake-up %q: %w: %w", payload, ErrWakeScore, err)
	case math.IsNaN(score):
		return w, fmt.Errorf("parse wake-up %q: %w: NaN", payload, ErrWakeScore)
	}
	w.Score = score
	return w, nil
}

// wakeRetry is how Wakes waits before it subscribes again once its
// subscription ended: from 100 ms, so a dropped connection costs little,
// growing to 5 s, so a Redis that is down is not spun against; jittered so a
// fleet does not resubscribe in lockstep. Scanners still poll meanwhile.
var wakeRetry = backoff.Policy{Min: 100 * time.Millisecond, Max: 5 * time.Second, Jitter: 0.2}

// Wakes subscribes to WakeChannel(prefix) and delivers every wake-up parsed,
// and a Subscribed one each time the subscription is made (again), until
// ctx ends; then it closes the channel. A payload whose score alone is
// unusable is delivered with Score -Inf (see ParseWake: look at once); other
// malformed payloads are dropped. When the subscription ends it subscribes
// again after a wakeRetry back-off. Wake-ups are hints: one missed meanwhile only delays
// a message until its scanner's next poll.
func (q *Queue) Wakes(ctx context.Context, prefix string) <-chan Wake {
	return resubscribe(ctx, func(ctx context.Context, out chan<- Wake) bool {
		return q.relayWakes(ctx, prefix, out)
	})
}

// resubscribe runs relay (one subscription, reporting whether anything came
// through it) until ctx ends, again after a wakeRetry back-off each time it
// returns, and then closes the channel relay delivers to.
func resubscribe[T any](ctx context.Context, relay func(context.Context, chan<- T) bool) <-chan T {
	out := make(chan T)
	go func() {
		defer close(out)
		retry := backoff.New(wakeRetry)
		for ctx.Err() == nil {
			if relay(ctx, out) {
				retry.Reset()
			}
			t := time.NewTimer(retry.Next())
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
		}
	}()
	return out
}

// relayWakes runs one subscription: it returns when ctx ends or the
// subscription's channel closes, reporting whether it was ever confirmed.
// go-redis makes a dropped subscription again by itself; each confirmation
// is relayed as a Subscribed wake-up.
func (q *Queue) relayWakes(ctx context.Context, prefix string, out chan<- Wake) (confirmed bool) {
	ps := q.rdb.Subscribe(ctx, WakeChannel(prefix))
	ch := ps.ChannelWithSubscriptions()
	defer closeDrained(ps, ch)
	for {
		var w Wake
		select {
		case <-ctx.Done():
			return confirmed
		case msg, ok := <-ch:
			if !ok {
				return confirmed
			}
			switch m := msg.(type) {
			case *redis.Subscription:
				if m.Kind != "subscribe" {
					continue
				}
				confirmed = true
				w = Wake{Subscribed: true, Score: math.Inf(-1)}
			case *redis.Message:
				var err error
				if w, err = ParseWake(m.Payload); err != nil && !errors.Is(err, ErrWakeScore) {
					continue
				}
			default:
				continue
			}
		}
		select {
		case out <- w:
		case <-ctx.Done():
			return confirmed
		}
	}
}

// wakeArgs are the channel and payload prefix a script publishes for slot.
func (t Topic) wakeArgs(slot int) (channel, prefix string) {
	return WakeChannel(t.Prefix), t.Name + "\n" + strconv.Itoa(slot) + "\n"
}
