package e2etest

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/queue"
)

// Plan is a set of uniquely numbered messages: message i is due at Due[i].
// A test that reschedules message i sets Due[i] to its new time; one that
// cancels it sets Cancelled[i]: it must then never arrive.
type Plan struct {
	Due       []time.Time
	Cancelled map[int]bool
}

// NewPlan spreads n messages evenly over [from, from+spread), each due on a
// whole millisecond.
func NewPlan(n int, from time.Time, spread time.Duration) *Plan {
	p := &Plan{Due: make([]time.Time, n)}
	for i := range n {
		p.Due[i] = from.Add(spread * time.Duration(i) / time.Duration(n)).Truncate(time.Millisecond)
	}
	return p
}

// Len is the number of messages.
func (p *Plan) Len() int { return len(p.Due) }

// Last is the latest due time.
func (p *Plan) Last() time.Time {
	var last time.Time
	for _, d := range p.Due {
		if d.After(last) {
			last = d
		}
	}
	return last
}

// Body is the body of message i: a small JSON document that names it.
func Body(i int) string { return fmt.Sprintf(`{"n":%d,"pad":"%s"}`, i, strings.Repeat("x", 48)) }

// Number is the number of the message whose body is body, or -1.
func Number(body []byte) int {
	// Bytes, not a string: a body can be megabytes and this runs for
	// every delivery.
	s, ok := bytes.CutPrefix(body, []byte(`{"n":`))
	if !ok {
		return -1
	}
	end := bytes.IndexByte(s, ',')
	if end < 0 {
		return -1
	}
	n, err := strconv.Atoi(string(s[:end]))
	if err != nil {
		return -1
	}
	return n
}

// RawMember is the member of message i on a raw topic: its body.
func RawMember(i int) string { return Body(i) }

// EnvelopeMember is the member of message i on an envelope topic, with id
// "msg-<i>".
func EnvelopeMember(i int) string {
	b, err := queue.EncodeEnvelope(queue.Message{ID: "msg-" + strconv.Itoa(i), Body: []byte(Body(i))})
	if err != nil {
		panic(err) // a fixed, valid message
	}
	return string(b)
}

// Schedule writes message i as member(i) into its slot of t with ZADD, as a
// producer in any language would, for every i in numbers (all when nil).
func (p *Plan) Schedule(tb testing.TB, rdb redis.UniversalClient, t queue.Topic, member func(i int) string, numbers []int) {
	tb.Helper()
	key := func(m string) (string, error) {
		slot, _, err := t.Locate([]byte(m))
		if err != nil {
			return "", err
		}
		return t.Keys(slot).Scheduled, nil
	}
	if err := p.Write(context.Background(), rdb, key, member, numbers); err != nil {
		tb.Fatal(err)
	}
}

// Write ZADDs message i as member(i), scored with Due[i], to the set key
// names for it, for every i in numbers (all when nil). It is Schedule for a
// producer that runs beside the test, or that computes keys by itself (see
// ProducerKey).
func (p *Plan) Write(ctx context.Context, rdb redis.UniversalClient, key func(member string) (string, error), member func(i int) string, numbers []int) error {
	if numbers == nil {
		numbers = make([]int, p.Len())
		for i := range numbers {
			numbers[i] = i
		}
	}
	pipe := rdb.Pipeline()
	for _, i := range numbers {
		m := member(i)
		k, err := key(m)
		if err != nil {
			return fmt.Errorf("locate message %d: %w", i, err)
		}
		pipe.ZAdd(ctx, k, redis.Z{Score: float64(p.Due[i].UnixMilli()), Member: m})
		if pipe.Len() >= 500 {
			if _, err := pipe.Exec(ctx); err != nil {
				return fmt.Errorf("schedule: %w", err)
			}
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("schedule: %w", err)
	}
	return nil
}

// ProducerKey is the scheduled set of a member of a raw topic computed the
// way docs/architecture.md (Redis key layout) tells a producer in any
// language: `<prefix>:{<topic>:<slot>}`
// with slot CRC32-IEEE(member) & (slots-1). It does not ask package queue,
// so a test that schedules through it also checks that the daemon reads the
// documented layout.
func ProducerKey(prefix, topic string, slots int) func(member string) (string, error) {
	return func(m string) (string, error) {
		slot := crc32.ChecksumIEEE([]byte(m)) & uint32(slots-1)
		return fmt.Sprintf("%s:{%s:%d}", prefix, topic, slot), nil
	}
}
