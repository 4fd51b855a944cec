package kafka

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// blackholeFirstProduce makes the cluster read the first produce request
// and never answer it; it counts every produce request in n and closes
// stuck once the first one arrived.
func blackholeFirstProduce(c *kfake.Cluster) (n *atomic.Int32, stuck <-chan struct{}) {
	n = new(atomic.Int32)
	first := make(chan struct{})
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if n.Add(1) == 1 {
			close(first)
			return nil, nil, true
		}
		return nil, nil, false
	})
	return n, first
}

// A produce request the broker does not answer holds its own Publish only:
// the next Publish to the same partition is sent on another connection and
// confirmed at once, not queued behind it for the write timeout.
func TestStuckRequestDoesNotHoldTheNextPublish(t *testing.T) {
	t.Parallel()
	topic := uniqueTopic(t)
	c := newCluster(t, topic, 1)
	const writeTimeout = 5 * time.Second
	s := newSink(t, Config{Brokers: []string{addr(c)}, Topic: topic, WriteTimeout: writeTimeout})
	if err := s.CheckDestination(context.Background()); err != nil {
		t.Fatalf("check destination: %v", err)
	}
	_, stuck := blackholeFirstProduce(c)

	first := make(chan error, 1)
	go func() { first <- publish(t, s, messages("stuck", 2)) }()
	<-stuck
	start := time.Now()
	if err := publish(t, s, messages("next", 2)); err != nil {
		t.Fatalf("publish behind a stuck request: %v", err)
	}
	if took := time.Since(start); took > writeTimeout/2 {
		t.Errorf("publish behind a stuck request took %v: it waited for the stuck one (write timeout %v)", took, writeTimeout)
	}
	wantClasses(t, <-first, "not-connected", "not-connected")
	recs := newConsumer(t, addr(c), topic).read(t, 2, 30*time.Second)
	for i, r := range recs {
		if got := recordID(r); got != messages("next", 2)[i].ID {
			t.Errorf("record %d is %s, want the second publish's", i, got)
		}
	}
}

// Once the caller of Publish gave up, nothing more of its batch is sent:
// a record that would be written then could land after records published
// later, and would be a duplicate of the retry.
func TestNothingIsSentAfterTheCallerGaveUp(t *testing.T) {
	t.Parallel()
	topic := uniqueTopic(t)
	c := newCluster(t, topic, 1)
	const writeTimeout = 2 * time.Second
	// One record per produce request: three requests, one after the other.
	s := newSink(t, Config{Brokers: []string{addr(c)}, Topic: topic, BatchSize: 1, WriteTimeout: writeTimeout})
	if err := s.CheckDestination(context.Background()); err != nil {
		t.Fatalf("check destination: %v", err)
	}
	n, _ := blackholeFirstProduce(c)

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := s.Publish(ctx, messages("gave-up", 3)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("publish whose caller gave up: %v, want context.DeadlineExceeded", err)
	}
	time.Sleep(writeTimeout + 500*time.Millisecond)
	if got := n.Load(); got != 1 {
		t.Errorf("%d produce requests after the caller gave up at the first, want 1", got)
	}
}
