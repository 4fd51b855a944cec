package e2etest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/queue"
)

// Plan is a set of uniquely numbered messages: message i is due at Due[i].
type Plan struct {
	Due []time.Time
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
	s, ok := strings.CutPrefix(string(body), `{"n":`)
	if !ok {
		return -1
	}
	end := strings.IndexByte(s, ',')
	if end < 0 {
		return -1
	}
	n, err := strconv.Atoi(s[:end])
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
	if numbers == nil {
		numbers = make([]int, p.Len())
		for i := range numbers {
			numbers[i] = i
		}
	}
	ctx := context.Background()
	pipe := rdb.Pipeline()
	for _, i := range numbers {
		m := member(i)
		slot, _, err := t.Locate([]byte(m))
		if err != nil {
			tb.Fatalf("locate message %d: %v", i, err)
		}
		pipe.ZAdd(ctx, t.Keys(slot).Scheduled, redis.Z{Score: float64(p.Due[i].UnixMilli()), Member: m})
		if pipe.Len() >= 500 {
			if _, err := pipe.Exec(ctx); err != nil {
				tb.Fatalf("schedule: %v", err)
			}
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		tb.Fatalf("schedule: %v", err)
	}
}
