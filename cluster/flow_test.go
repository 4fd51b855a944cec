package cluster

import (
	"context"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"
)

// producer writes numbered messages to a topic while the test runs, each due
// a fixed delay after it was written, and remembers every due time.
type producer struct {
	rdb           redis.UniversalClient
	prefix, topic string
	slots         int

	mu      sync.Mutex
	due     []time.Time // message number → due time
	written int
	err     error
	done    chan struct{}
}

func member(n int) string { return fmt.Sprintf(`{"n":%d,"pad":"%s"}`, n, strings.Repeat("x", 64)) }

// number reads a message's number back; -1 for a body that is not ours.
func number(body string) int {
	s, ok := strings.CutPrefix(body, `{"n":`)
	i := strings.IndexByte(s, ',')
	if !ok || i < 0 {
		return -1
	}
	n, err := strconv.Atoi(s[:i])
	if err != nil {
		return -1
	}
	return n
}

// key is the scheduled set of a member: CRC32-IEEE(member) & (slots-1), as
// any producer computes it.
func (p *producer) key(m string) string {
	slot := crc32.ChecksumIEEE([]byte(m)) & uint32(p.slots-1)
	return fmt.Sprintf("%s:{%s:%d}", p.prefix, p.topic, slot)
}

// write schedules messages from..to-1, each due delay from now.
func (p *producer) write(ctx context.Context, from, to int, delay time.Duration) error {
	due := time.Now().Add(delay).Truncate(time.Millisecond)
	pipe := p.rdb.Pipeline()
	for i := from; i < to; i++ {
		m := member(i)
		pipe.ZAdd(ctx, p.key(m), redis.Z{Score: float64(due.UnixMilli()), Member: m})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("schedule messages %d-%d: %w", from, to-1, err)
	}
	p.mu.Lock()
	for i := from; i < to; i++ {
		p.due[i] = due
	}
	p.written = to
	p.mu.Unlock()
	return nil
}

// run writes n messages at an even rate over spread (in steps of 50 ms), the
// first `already` of them having been written before, each due delay after
// it is written. It ends early when ctx ends.
func (p *producer) run(ctx context.Context, n, already int, spread, delay time.Duration) {
	defer close(p.done)
	const step = 50 * time.Millisecond
	start := time.Now()
	next := already
	for next < n && ctx.Err() == nil {
		elapsed := time.Since(start) + step
		upTo := min(n, already+int(float64(n-already)*float64(elapsed)/float64(spread)))
		if upTo > next {
			if err := p.write(ctx, next, upTo, delay); err != nil {
				p.mu.Lock()
				p.err = err
				p.mu.Unlock()
				return
			}
			next = upTo
		}
		select {
		case <-ctx.Done():
		case <-time.After(step):
		}
	}
}

func newProducer(rdb redis.UniversalClient, prefix, topic string, slots, n int) *producer {
	return &producer{rdb: rdb, prefix: prefix, topic: topic, slots: slots, due: make([]time.Time, n), done: make(chan struct{})}
}

// start runs the producer in the background; the test waits for it at its end.
func (p *producer) start(t *testing.T, n, already int, spread, delay time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	go p.run(ctx, n, already, spread, delay)
	t.Cleanup(func() {
		cancel()
		<-p.done
	})
}

// wait waits until every message is written.
func (p *producer) wait(t *testing.T, within time.Duration) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(within):
		t.Fatalf("producer did not finish within %s", within)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		t.Fatal(p.err)
	}
}

// rabbit is an exchange and a queue bound to it, consumed by the test.
type rabbit struct {
	conn     *amqp.Connection
	Exchange string
	Queue    string
	mu       sync.Mutex
	got      []delivery
}

// delivery is one message the consumer received.
type delivery struct {
	n   int
	due int64 // x-delaybridge-due
	at  time.Time
}

func newRabbit(t *testing.T, name string) *rabbit {
	t.Helper()
	conn, err := amqp.Dial(amqpURL())
	if err != nil {
		t.Fatalf("rabbitmq at %s is required: %v", amqpURL(), err)
	}
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	r := &rabbit{conn: conn, Exchange: name, Queue: name}
	if err := ch.ExchangeDeclare(name, "direct", false, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	// Not durable: the test counts what arrives, not what survives a broker
	// restart, and the broker keeps up with four publishers without a disk.
	if _, err := ch.QueueDeclare(name, false, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := ch.QueueBind(name, name, name, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := ch.Qos(5000, 0, false); err != nil {
		t.Fatal(err)
	}
	msgs, err := ch.Consume(name, "", true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	consumed := make(chan struct{})
	go func() {
		defer close(consumed)
		for m := range msgs {
			d := delivery{n: number(string(m.Body)), at: time.Now()}
			d.due, _ = m.Headers["x-delaybridge-due"].(int64)
			r.mu.Lock()
			r.got = append(r.got, d)
			r.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		if ch2, err := conn.Channel(); err == nil {
			ch2.QueueDelete(name, false, false, false)
			ch2.ExchangeDelete(name, false, false)
		}
		conn.Close()
		<-consumed
	})
	return r
}

func (r *rabbit) deliveries() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.got...)
}

// distinct is how many different messages arrived.
func (r *rabbit) distinct() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := make(map[int]struct{}, len(r.got))
	for _, d := range r.got {
		seen[d.n] = struct{}{}
	}
	return len(seen)
}

// tally is what arrived compared with what was scheduled.
type tally struct {
	Messages, Delivered, Lost, Early, Duplicates, Malformed int
	// MaxLate is the longest a message arrived after its due time.
	MaxLate time.Duration
}

// count compares every delivery with the producer's due times.
func count(p *producer, got []delivery) tally {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.written
	tl := tally{Messages: n, Delivered: len(got)}
	seen := make([]int, n)
	for _, d := range got {
		if d.n < 0 || d.n >= n || d.due != p.due[d.n].UnixMilli() {
			tl.Malformed++
			continue
		}
		seen[d.n]++
		due := p.due[d.n]
		if d.at.Before(due) {
			tl.Early++
		}
		tl.MaxLate = max(tl.MaxLate, d.at.Sub(due))
	}
	for _, c := range seen {
		switch {
		case c == 0:
			tl.Lost++
		case c > 1:
			tl.Duplicates += c - 1
		}
	}
	return tl
}

// check fails the test on any lost, early or malformed message and reports
// the tally.
func (tl tally) check(t *testing.T) {
	t.Helper()
	t.Logf("messages %d, delivered %d, lost %d, early %d, duplicates %d, latest %s after due",
		tl.Messages, tl.Delivered, tl.Lost, tl.Early, tl.Duplicates, tl.MaxLate.Round(time.Millisecond))
	if tl.Lost != 0 || tl.Early != 0 || tl.Malformed != 0 {
		t.Errorf("lost %d, early %d, malformed %d", tl.Lost, tl.Early, tl.Malformed)
	}
}
