package kafka

import (
	"bytes"
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/delaybridge/delaybridge/sinks"
)

// class names the error classes of the sinks contract.
func class(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, sinks.ErrPermanent):
		return "permanent"
	case errors.Is(err, sinks.ErrNotConnected):
		return "not-connected"
	case errors.Is(err, sinks.ErrClosed):
		return "closed"
	}
	return "retryable"
}

// classes is the class of each message's result.
func classes(err error, n int) []string {
	out := make([]string, n)
	for i, e := range sinks.Results(err, n) {
		out[i] = class(e)
	}
	return out
}

func wantClasses(t *testing.T, err error, want ...string) {
	t.Helper()
	got := classes(err, len(want))
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("result classes %v, want %v (error: %v)", got, want, err)
		}
	}
}

// observeProduce counts the produce requests the cluster receives.
func observeProduce(c *kfake.Cluster, topic string) *kfake.FaultHandle {
	return c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: topic, Observe: true, Count: -1})
}

func TestRecordOverBrokerLimitIsPermanentAloneAndItsBatchIsWritten(t *testing.T) {
	t.Parallel()
	topic := uniqueTopic(t)
	// The sink does not know this limit: the broker refuses the whole
	// partition batch, and the sink must find which record caused it.
	c := newCluster(t, topic, 1, kfake.BrokerConfigs(map[string]string{"message.max.bytes": "2000"}))
	s := newSink(t, Config{Brokers: []string{addr(c)}, Topic: topic})
	msgs := messages("big", 4)
	msgs[2].Body = bytes.Repeat([]byte("x"), 3000)

	err := publish(t, s, msgs)
	wantClasses(t, err, "ok", "ok", "permanent", "ok")
	if e := sinks.Results(err, 4)[2]; !errors.Is(e, kafkago.MessageSizeTooLarge) {
		t.Errorf("too large: %v, want it to wrap kafka-go's MessageSizeTooLarge", e)
	}
	recs := newConsumer(t, addr(c), topic).read(t, 3, 30*time.Second)
	for i, want := range []int{0, 1, 3} {
		if got := recordID(recs[i]); got != msgs[want].ID {
			t.Errorf("record %d is %s, want %s", i, got, msgs[want].ID)
		}
	}
}

func TestRecordsRefusedWithATooLargeOneAreRetryableNotPermanent(t *testing.T) {
	t.Parallel()
	topic := uniqueTopic(t)
	c := newCluster(t, topic, 1, kfake.BrokerConfigs(map[string]string{"message.max.bytes": "2000"}))
	s := newSink(t, Config{Brokers: []string{addr(c)}, Topic: topic})
	// The batch of four is refused as too large. Then, as the sink resends
	// each record alone, the small ones meet a transient broker error: they
	// must come back retryable, not dead-lettered with the big one.
	c.Fault(kfake.Fault{
		Keys: []kmsg.Key{kmsg.Produce}, Topic: topic, Err: kerr.NotEnoughReplicas, Count: -1,
		When: func(req kmsg.Request) bool {
			for _, rt := range req.(*kmsg.ProduceRequest).Topics {
				for _, rp := range rt.Partitions {
					if len(rp.Records) < 1000 {
						return true
					}
				}
			}
			return false
		},
	})
	msgs := messages("mix", 4)
	msgs[1].Body = bytes.Repeat([]byte("x"), 3000)

	err := publish(t, s, msgs)
	wantClasses(t, err, "retryable", "permanent", "retryable", "retryable")
	if e := sinks.Results(err, 4)[0]; !errors.Is(e, kafkago.NotEnoughReplicas) {
		t.Errorf("small record: %v, want the broker's NOT_ENOUGH_REPLICAS", e)
	}
}

func TestRecordOverConfiguredLimitFailsWithoutAWrite(t *testing.T) {
	t.Parallel()
	topic := uniqueTopic(t)
	c := newCluster(t, topic, 1)
	produced := observeProduce(c, topic)
	s := newSink(t, Config{Brokers: []string{addr(c)}, Topic: topic, MaxRecordBytes: 500})
	msgs := messages("cfg", 2)
	msgs[0].Headers = map[string]string{"x-big": string(bytes.Repeat([]byte("h"), 500))}
	msgs[1].Body = bytes.Repeat([]byte("b"), 500)

	err := publish(t, s, msgs)
	wantClasses(t, err, "permanent", "permanent")
	if n := produced.Hits(); n != 0 {
		t.Errorf("%d produce requests, want none", n)
	}
}

func TestUnknownTopicIsRetryableUntilCreated(t *testing.T) {
	t.Parallel()
	c := newCluster(t, uniqueTopic(t), 1)
	missing := uniqueTopic(t)
	s := newSink(t, Config{Brokers: []string{addr(c)}, Topic: missing})
	msgs := messages("unknown", 3)

	err := publish(t, s, msgs)
	wantClasses(t, err, "retryable", "retryable", "retryable")
	if !errors.Is(err, kafkago.UnknownTopicOrPartition) {
		t.Fatalf("unknown topic: %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
	}

	createTopic(t, addr(c), missing)
	deadline := time.Now().Add(20 * time.Second)
	for {
		err = publish(t, s, msgs)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("publish after the topic was created: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	newConsumer(t, addr(c), missing).read(t, len(msgs), 30*time.Second)
}

func TestTransientBrokerErrorIsRetryableAndNextPublishSucceeds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  *kerr.Error
	}{
		{"not enough replicas", kerr.NotEnoughReplicas},
		{"not leader", kerr.NotLeaderForPartition},
		{"unknown server error", kerr.UnknownServerError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			topic := uniqueTopic(t)
			c := newCluster(t, topic, 1)
			s := newSink(t, Config{Brokers: []string{addr(c)}, Topic: topic})
			if err := publish(t, s, messages("warm", 1)); err != nil {
				t.Fatalf("warm-up publish: %v", err)
			}
			// kafka-go retries a temporary error once itself: fail both.
			f := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: topic, Err: tt.err, Count: 2})
			msgs := messages("transient", 3)
			err := publish(t, s, msgs)
			wantClasses(t, err, "retryable", "retryable", "retryable")
			f.Remove()
			if err := publish(t, s, msgs); err != nil {
				t.Fatalf("second publish: %v", err)
			}
			newConsumer(t, addr(c), topic).read(t, 1+len(msgs), 30*time.Second)
		})
	}
}

func TestOneTransientErrorIsRiddenOver(t *testing.T) {
	t.Parallel()
	topic := uniqueTopic(t)
	c := newCluster(t, topic, 1)
	s := newSink(t, Config{Brokers: []string{addr(c)}, Topic: topic})
	f := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: topic, Err: kerr.NotEnoughReplicas})
	if err := publish(t, s, messages("once", 2)); err != nil {
		t.Fatalf("publish with one transient error: %v", err)
	}
	if f.Hits() != 1 {
		t.Errorf("fault hit %d times, want 1", f.Hits())
	}
}

func TestBrokerDownIsNotConnected(t *testing.T) {
	t.Parallel()
	topic := uniqueTopic(t)
	c := newCluster(t, topic, 1)
	brokers := []string{addr(c)}
	s := newSink(t, Config{Brokers: brokers, Topic: topic})
	if err := publish(t, s, messages("up", 2)); err != nil {
		t.Fatalf("publish while up: %v", err)
	}
	if err := s.Ping(context.Background()); err != nil {
		t.Fatalf("ping while up: %v", err)
	}
	c.Close()

	wantClasses(t, publish(t, s, messages("down", 2)), "not-connected", "not-connected")
	waitPing(t, s, sinks.ErrNotConnected)

	// A sink that never reached the broker says the same.
	fresh := newSink(t, Config{Brokers: brokers, Topic: topic})
	wantClasses(t, publish(t, fresh, messages("never", 2)), "not-connected", "not-connected")
	if err := fresh.Ping(context.Background()); !errors.Is(err, sinks.ErrNotConnected) {
		t.Fatalf("ping of a dead broker: %v, want ErrNotConnected", err)
	}
}

func TestDroppedConnectionIsNotConnected(t *testing.T) {
	t.Parallel()
	topic := uniqueTopic(t)
	c := newCluster(t, topic, 1)
	s := newSink(t, Config{Brokers: []string{addr(c)}, Topic: topic})
	if err := publish(t, s, messages("warm", 1)); err != nil {
		t.Fatalf("warm-up publish: %v", err)
	}
	// The broker closes the connection on every produce request (kafka-go
	// retries a broken connection once).
	var dropped atomic.Int32
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		dropped.Add(1)
		return nil, errors.New("drop the connection"), true
	})
	wantClasses(t, publish(t, s, messages("drop", 2)), "not-connected", "not-connected")
	if dropped.Load() < 1 {
		t.Fatal("no produce request reached the broker")
	}
}

func TestCancelledPublishReturnsPromptly(t *testing.T) {
	t.Parallel()
	topic := uniqueTopic(t)
	c := newCluster(t, topic, 1)
	s := newSink(t, Config{Brokers: []string{addr(c)}, Topic: topic, WriteTimeout: time.Second})
	if err := publish(t, s, messages("warm", 1)); err != nil {
		t.Fatalf("warm-up publish: %v", err)
	}
	blackholeProduce(c)

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := s.Publish(ctx, messages("stuck", 2))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("publish to a broker that does not answer: %v, want context.DeadlineExceeded", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("publish took %v after its context ended", took)
	}
}

// A broker that does not answer is treated like one that is down: no
// answer is no verdict on the message, so it must not use up an attempt.
func TestUnansweredProduceIsNotConnected(t *testing.T) {
	t.Parallel()
	topic := uniqueTopic(t)
	c := newCluster(t, topic, 1)
	s := newSink(t, Config{Brokers: []string{addr(c)}, Topic: topic, WriteTimeout: 300 * time.Millisecond})
	if err := publish(t, s, messages("warm", 1)); err != nil {
		t.Fatalf("warm-up publish: %v", err)
	}
	blackholeProduce(c)
	start := time.Now()
	err := publish(t, s, messages("stuck", 2))
	t.Logf("unanswered produce after %v: %v", time.Since(start), err)
	wantClasses(t, err, "not-connected", "not-connected")
}

func TestCloseDuringPublishReturnsErrClosed(t *testing.T) {
	t.Parallel()
	topic := uniqueTopic(t)
	c := newCluster(t, topic, 1)
	s, err := New(Config{Brokers: []string{addr(c)}, Topic: topic, WriteTimeout: time.Second}, nil)
	if err != nil {
		t.Fatalf("new sink: %v", err)
	}
	if err := publish(t, s, messages("warm", 1)); err != nil {
		t.Fatalf("warm-up publish: %v", err)
	}
	blackholeProduce(c)
	done := make(chan error, 1)
	go func() { done <- publish(t, s, messages("stuck", 2)) }()
	time.Sleep(100 * time.Millisecond) // let the write start; the outcome does not depend on it
	start := time.Now()
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, sinks.ErrClosed) {
			t.Fatalf("publish interrupted by close: %v, want ErrClosed", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("publish did not return after close")
	}
	t.Logf("close took %v with a write under way", time.Since(start))
	if err := s.Ping(context.Background()); !errors.Is(err, sinks.ErrNotConnected) {
		t.Errorf("ping after close: %v, want ErrNotConnected", err)
	}
}

// blackholeProduce makes the cluster read produce requests and never answer.
func blackholeProduce(c *kfake.Cluster) {
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		return nil, nil, true
	})
}

// waitPing waits until Ping's error matches want (nil: succeeds).
func waitPing(t *testing.T, s *Sink, want error) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := s.Ping(context.Background())
		if (want == nil && err == nil) || (want != nil && errors.Is(err, want)) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("ping: %v, want %v", err, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// createTopic creates a one-partition topic through the admin API.
func createTopic(t *testing.T, brokers, topic string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers))
	if err != nil {
		t.Fatalf("admin client: %v", err)
	}
	defer cl.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, 1, 1
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
}
