package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/delaybridge/delaybridge/queue"
)

// spreadMessages is how many messages spread holds besides the far one
// (about a minute on the 2-core VM); spreadDue of them are due at once.
const (
	spreadMessages = 100_000
	spreadDue      = 1_000
	spreadLookups  = 1_000
)

// runSpread (#40): one envelope slot holds a message due at the largest
// score the API accepts (2^53 ms) and spreadMessages more spread over 100
// years, spreadDue of them due now. Lookups, cancels and reschedules by id,
// claims and acks of what is due, and a whole reap sweep run against it;
// the result is the longest script in SLOWLOG (docs/architecture.md, Guarantees 10:
// none may take 10 ms, whatever the spread of due times). It needs a Redis
// of its own (-redis-server), as it sets the SLOWLOG threshold. No daemon.
func runSpread(ctx context.Context, e *env) (Scenario, error) {
	n := spreadMessages
	if e.o.quick {
		n /= 10
	}
	r := Scenario{Messages: n + 1}
	if e.o.redisBin == "" {
		return r, errors.New("spread sets SLOWLOG's threshold: run it with -redis-server")
	}
	prefix := e.prefix("spread")
	defer e.dropKeys(prefix)
	t := queue.Topic{Name: "bench", Prefix: prefix, Slots: 1, Format: queue.FormatEnvelope}
	if err := e.spreadFill(ctx, t, n); err != nil {
		return r, err
	}
	for _, c := range [][]any{{"CONFIG", "SET", "slowlog-log-slower-than", "0"}, {"CONFIG", "SET", "slowlog-max-len", "1000000"}, {"SLOWLOG", "RESET"}} {
		if err := e.rdb.Do(ctx, c...).Err(); err != nil {
			return r, fmt.Errorf("spread: %v: %w", c, err)
		}
	}
	start := time.Now()
	ops, err := e.spreadWork(ctx, t, n)
	if err != nil {
		return r, err
	}
	took := time.Since(start)
	log, err := e.rdb.SlowLogGet(ctx, -1).Result()
	if err != nil {
		return r, fmt.Errorf("spread: SLOWLOG GET: %w", err)
	}
	longest, what := time.Duration(0), ""
	for _, l := range log {
		if l.Duration > longest && len(l.Args) > 0 && l.Args[0] == "evalsha" {
			longest, what = l.Duration, fmt.Sprint(l.Args[min(14, len(l.Args)-1):])
		}
	}
	ms := float64(longest) / float64(time.Millisecond)
	r.Notes = append(r.Notes, fmt.Sprintf("%d messages over 100 years and one at 2^53 ms in one envelope slot: %d script calls in %s, the longest %.2f ms (%s)",
		n, ops, took.Round(time.Millisecond), ms, what))
	r.target("longest script in SLOWLOG, due times spread over 100 years", ms, "<", 10, "ms")
	fmt.Fprintf(os.Stderr, "   %d script calls, the longest %.2f ms\n", ops, ms)
	return r, nil
}

// spreadFill schedules the far message and n more over 100 years.
func (e *env) spreadFill(ctx context.Context, t queue.Topic, n int) error {
	now := time.Now()
	if _, err := e.q.Schedule(ctx, t, queue.Message{ID: "far", Body: []byte("far")}, queue.At(time.UnixMilli(1<<53))); err != nil {
		return fmt.Errorf("spread: %w", err)
	}
	const century = 100 * 365 * 24 * time.Hour
	items := make([]queue.Item, 0, 1000)
	for i := range n {
		due := now.Add(-time.Second)
		if i >= spreadDue {
			due = now.Add(time.Duration(float64(century) * float64(i) / float64(n)))
		}
		items = append(items, queue.Item{Message: queue.Message{ID: "m" + strconv.Itoa(i), Body: []byte("x")}, When: queue.At(due)})
		if len(items) == cap(items) || i == n-1 {
			if _, err := e.q.ScheduleBatch(ctx, t, items); err != nil {
				return fmt.Errorf("spread: %w", err)
			}
			items = items[:0]
		}
	}
	return nil
}

// spreadWork looks up, cancels and reschedules ids, claims and acks what is
// due and sweeps the slot once; it returns how many script calls it made.
func (e *env) spreadWork(ctx context.Context, t queue.Topic, n int) (int, error) {
	ops := 0
	for i := range spreadLookups {
		id := "m" + strconv.Itoa(i*n/spreadLookups)
		if _, err := e.q.Get(ctx, t, id); err != nil && !errors.Is(err, queue.ErrNotFound) {
			return ops, fmt.Errorf("spread: %w", err)
		}
		ops++
		var err error
		switch i % 10 {
		case 1:
			_, err = e.q.CancelID(ctx, t, id)
		case 2:
			_, err = e.q.Reschedule(ctx, t, queue.ByID(id), queue.At(time.UnixMilli(1<<53)))
		default:
			continue
		}
		if err != nil && !errors.Is(err, queue.ErrNotFound) && !errors.Is(err, queue.ErrInFlight) {
			return ops, fmt.Errorf("spread %s: %w", id, err)
		}
		ops++
	}
	for {
		c, err := e.q.Claim(ctx, t, 0, 100, time.Minute)
		if err != nil {
			return ops, fmt.Errorf("spread: %w", err)
		}
		ops++
		if len(c.Messages) == 0 {
			break
		}
		ms := make([]string, len(c.Messages))
		for i, m := range c.Messages {
			ms[i] = m.Member
		}
		if _, err := e.q.Ack(ctx, t, 0, ms); err != nil {
			return ops, fmt.Errorf("spread: %w", err)
		}
		ops++
	}
	for cursor := ""; cursor != "0"; ops++ {
		r, err := e.q.Reap(ctx, t, 0, 1000, cursor)
		if err != nil {
			return ops, fmt.Errorf("spread: %w", err)
		}
		cursor = r.Cursor
	}
	return ops, nil
}
