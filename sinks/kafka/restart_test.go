package kafka

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/delaybridge/delaybridge/sinks"
)

// TestBrokerRestartMidStreamLosesNothing publishes batches in a loop while
// the broker goes away and comes back on the same port with its data, and
// retries whatever failed as the forwarder would. Every message must be
// read back at least once; duplicates are allowed (kafka-go has no
// idempotent producer) and counted.
func TestBrokerRestartMidStreamLosesNothing(t *testing.T) {
	t.Parallel()
	const batches, perBatch = 60, 20
	topic := uniqueTopic(t)
	dir := t.TempDir()
	first, err := kfake.NewCluster(kfake.Ports(0), kfake.SeedTopics(1, topic), kfake.DataDir(dir))
	if err != nil {
		t.Fatalf("start kfake: %v", err)
	}
	t.Cleanup(first.Close)
	brokers := addr(first)
	s := newSink(t, Config{Brokers: []string{brokers}, Topic: topic, WriteTimeout: 2 * time.Second})

	var (
		confirmed atomic.Int64
		mu        sync.Mutex
		failures  = map[string]int{} // class -> count, while retrying
	)
	all := make([]sinks.Message, 0, batches*perBatch)
	for b := range batches {
		all = append(all, messages("r"+strconv.Itoa(b), perBatch)...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		for b := range batches {
			pending := all[b*perBatch : (b+1)*perBatch]
			for len(pending) > 0 {
				if ctx.Err() != nil {
					done <- fmt.Errorf("batch %d: %d messages still pending: %w", b, len(pending), ctx.Err())
					return
				}
				err := s.Publish(ctx, pending)
				var retry []sinks.Message
				for i, e := range sinks.Results(err, len(pending)) {
					if e == nil {
						confirmed.Add(1)
						continue
					}
					if errors.Is(e, sinks.ErrPermanent) {
						done <- fmt.Errorf("message %s failed permanently: %w", pending[i].ID, e)
						return
					}
					mu.Lock()
					failures[class(e)]++
					mu.Unlock()
					retry = append(retry, pending[i])
				}
				if len(retry) > 0 {
					time.Sleep(50 * time.Millisecond) // the forwarder's back-off, shortened
				}
				pending = retry
			}
		}
		done <- nil
	}()

	waitFor(t, "a third of the messages confirmed", func() bool { return confirmed.Load() >= batches*perBatch/3 })
	first.Close()
	waitPing(t, s, sinks.ErrNotConnected)
	time.Sleep(300 * time.Millisecond) // let the publisher fail for a while
	second := restartCluster(t, brokers, dir)
	waitPing(t, s, nil)

	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	t.Logf("failed attempts while the broker was away, by class: %v", failures)
	mu.Unlock()

	c := newConsumer(t, addr(second), topic)
	recs := c.read(t, len(all), 30*time.Second)
	recs = append(recs, c.drain(time.Second)...)
	seen := make(map[string]int, len(all))
	for _, r := range recs {
		seen[recordID(r)]++
	}
	missing := 0
	for _, m := range all {
		if seen[m.ID] == 0 {
			missing++
		}
	}
	if missing > 0 {
		t.Fatalf("%d of %d messages lost", missing, len(all))
	}
	t.Logf("read %d records for %d messages: %d duplicates", len(recs), len(all), len(recs)-len(all))
}

// restartCluster starts a cluster on the address a closed one used, with
// its data directory. Another process may take the port meanwhile: retry.
func restartCluster(t *testing.T, hostport, dir string) *kfake.Cluster {
	t.Helper()
	_, portText, _ := net.SplitHostPort(hostport)
	port, _ := strconv.Atoi(portText)
	var lastErr error
	for range 50 {
		c, err := kfake.NewCluster(kfake.Ports(port), kfake.DataDir(dir))
		if err == nil {
			t.Cleanup(c.Close)
			return c
		}
		lastErr = err
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("restart kfake on %s: %v", hostport, lastErr)
	return nil
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRetriedWriteMayDuplicate shows the duplicate at-least-once allows: the
// broker stores the batch but answers REQUEST_TIMED_OUT, kafka-go writes it
// again, and consumers see every message twice, with the same id.
func TestRetriedWriteMayDuplicate(t *testing.T) {
	t.Parallel()
	topic := uniqueTopic(t)
	c := newCluster(t, topic, 1)
	s := newSink(t, Config{Brokers: []string{addr(c)}, Topic: topic})
	if err := publish(t, s, messages("warm", 1)); err != nil {
		t.Fatalf("warm-up publish: %v", err)
	}
	c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: topic, Err: kerr.RequestTimedOut})
	msgs := messages("dup", 5)
	if err := publish(t, s, msgs); err != nil {
		t.Fatalf("publish: %v", err)
	}
	cons := newConsumer(t, addr(c), topic)
	recs := cons.read(t, 1+len(msgs), 30*time.Second)
	recs = append(recs, cons.drain(time.Second)...)
	seen := map[string]int{}
	for _, r := range recs {
		seen[recordID(r)]++
	}
	dups := 0
	for _, m := range msgs {
		if seen[m.ID] == 0 {
			t.Fatalf("message %s lost", m.ID)
		}
		dups += seen[m.ID] - 1
	}
	t.Logf("%d records for %d messages: %d duplicates", len(recs)-1, len(msgs), dups)
	if dups == 0 {
		t.Fatal("no duplicate: the fault did not make kafka-go write the batch twice")
	}
}
