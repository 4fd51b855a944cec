package kafka

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/delaybridge/delaybridge/sinks"
)

// starter is s as a sinks.Starter, failing the test when it is not one.
func starter(t *testing.T, s sinks.Sink) sinks.Starter {
	t.Helper()
	st, ok := s.(sinks.Starter)
	if !ok {
		t.Fatal("the Kafka sink is not a sinks.Starter: the forwarder waits for each batch's acks before the next")
	}
	return st
}

// startedCall is one Start call's answer.
type startedCall struct {
	done   <-chan struct{}
	result func() error
}

func start(ctx context.Context, st sinks.Starter, msgs []sinks.Message) startedCall {
	done, result := st.Start(ctx, msgs)
	return startedCall{done, result}
}

// wait waits for c's answer, failing the test after timeout.
func (c startedCall) wait(t *testing.T, what string, timeout time.Duration) error {
	t.Helper()
	select {
	case <-c.done:
		return c.result()
	case <-time.After(timeout):
		t.Fatalf("%s: no answer within %v", what, timeout)
		return nil
	}
}

func (c startedCall) answered() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// holdFirstProduce makes the cluster hold the first produce request it
// reads until wake returns, then answer it with answer (nil: handle it as
// usual). held closes once that request arrived; n counts every produce
// request; others is told of each later one.
func holdFirstProduce(c *kfake.Cluster, wake func(others <-chan struct{}), answer func(kmsg.Request) kmsg.Response) (n *atomic.Int32, held <-chan struct{}) {
	n = new(atomic.Int32)
	first := make(chan struct{})
	others := make(chan struct{}, 100)
	c.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if n.Add(1) > 1 {
			select {
			case others <- struct{}{}:
			default:
			}
			return nil, nil, false
		}
		close(first)
		c.SleepControl(func() { wake(others) })
		if answer == nil {
			return nil, nil, false
		}
		return answer(req), nil, true
	})
	return n, first
}

// notEnoughReplicas is a produce response failing every partition of req
// with NOT_ENOUGH_REPLICAS, an error the sink retries once.
func notEnoughReplicas(req kmsg.Request) kmsg.Response {
	pr := req.(*kmsg.ProduceRequest)
	resp := pr.ResponseKind().(*kmsg.ProduceResponse)
	for _, t := range pr.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode = kerr.NotEnoughReplicas.Code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// Start returns without waiting for the brokers, and the batches started
// after one whose request is not answered yet go to another partition and
// are acknowledged meanwhile: a slot's batches overlap.
func TestStartPipelinesBatchesWhileTheFirstIsUnanswered(t *testing.T) {
	t.Parallel()
	topic := uniqueTopic(t)
	c := newCluster(t, topic, 2)
	const writeTimeout = 10 * time.Second
	s := newSink(t, Config{Brokers: []string{addr(c)}, Topic: topic, WriteTimeout: writeTimeout})
	st := starter(t, s)
	if err := s.CheckDestination(context.Background()); err != nil {
		t.Fatalf("check destination: %v", err)
	}
	release := make(chan struct{})
	_, held := holdFirstProduce(c, func(<-chan struct{}) { <-release }, nil)
	ctx := context.Background()

	first := start(ctx, st, messages("first", 3))
	<-held
	for b := range 3 {
		next := start(ctx, st, messages("next", 3))
		if err := next.wait(t, "a batch started behind an unanswered one", writeTimeout/2); err != nil {
			t.Fatalf("batch %d started behind an unanswered one: %v", b, err)
		}
	}
	if first.answered() {
		t.Fatal("the held request was answered before it was released")
	}
	close(release)
	if err := first.wait(t, "the released batch", writeTimeout); err != nil {
		t.Fatalf("the released batch: %v", err)
	}
	newConsumer(t, addr(c), topic).read(t, 12, 30*time.Second)
}

// The records of a batch started later never overtake those of an earlier
// batch in their partition, even when the earlier one's request fails at
// first and is retried.
func TestStartKeepsPartitionOrderAcrossARetriedRequest(t *testing.T) {
	t.Parallel()
	topic := uniqueTopic(t)
	c := newCluster(t, topic, 1)
	s := newSink(t, Config{Brokers: []string{addr(c)}, Topic: topic})
	st := starter(t, s)
	if err := s.CheckDestination(context.Background()); err != nil {
		t.Fatalf("check destination: %v", err)
	}
	// The first request is held until another produce request arrives
	// (a sink that sends the second batch at once) or for a while (one
	// that waits), then refused with a retryable error.
	n, held := holdFirstProduce(c, func(others <-chan struct{}) {
		select {
		case <-others:
		case <-time.After(300 * time.Millisecond):
		}
	}, notEnoughReplicas)
	st = s.Stream() // as a slot of the forwarder publishes
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	a, b := messages("a", 3), messages("b", 3)
	first := start(ctx, st, a)
	<-held
	second := start(ctx, st, b)
	for name, call := range map[string]startedCall{"first": first, "second": second} {
		if err := call.wait(t, name+" batch", 30*time.Second); err != nil {
			t.Fatalf("%s batch: %v", name, err)
		}
	}
	recs := newConsumer(t, addr(c), topic).read(t, 6, 30*time.Second)
	want := append(a, b...)
	for i, r := range recs {
		if got := recordID(r); got != want[i].ID {
			t.Fatalf("record %d is %s, want %s: the second batch overtook the retried first", i, got, want[i].ID)
		}
	}
	if got := n.Load(); got != 3 {
		t.Errorf("%d produce requests, want 3 (first, its retry, second)", got)
	}
}

// When a request fails on its connection, the records queued behind it in
// its partition are not sent (they would land before the failed ones are
// published again) and get the same error.
func TestStartSendsNothingBehindAFailedRequest(t *testing.T) {
	t.Parallel()
	topic := uniqueTopic(t)
	c := newCluster(t, topic, 1)
	const writeTimeout = time.Second
	s := newSink(t, Config{Brokers: []string{addr(c)}, Topic: topic, WriteTimeout: writeTimeout})
	st := starter(t, s)
	if err := s.CheckDestination(context.Background()); err != nil {
		t.Fatalf("check destination: %v", err)
	}
	n, stuck := blackholeFirstProduce(c)
	ctx := context.Background()

	first := start(ctx, st, messages("stuck", 2))
	<-stuck
	behind := start(ctx, st, messages("behind", 2))
	wantClasses(t, first.wait(t, "the stuck batch", 10*writeTimeout), "not-connected", "not-connected")
	wantClasses(t, behind.wait(t, "the batch behind it", 10*writeTimeout), "not-connected", "not-connected")
	if got := n.Load(); got != 1 {
		t.Errorf("%d produce requests, want only the stuck one", got)
	}
	// The partition takes records again afterwards.
	if err := start(ctx, st, messages("after", 2)).wait(t, "a batch after the failure", 10*writeTimeout); err != nil {
		t.Fatalf("a batch after the failure: %v", err)
	}
}

// Once the caller of Start gave up, nothing more of its batch is sent.
func TestStartSendsNothingAfterTheCallerGaveUp(t *testing.T) {
	t.Parallel()
	topic := uniqueTopic(t)
	c := newCluster(t, topic, 1)
	// One record per produce request: three requests, one after the other.
	s := newSink(t, Config{Brokers: []string{addr(c)}, Topic: topic, BatchSize: 1})
	st := starter(t, s)
	if err := s.CheckDestination(context.Background()); err != nil {
		t.Fatalf("check destination: %v", err)
	}
	release := make(chan struct{})
	n, held := holdFirstProduce(c, func(<-chan struct{}) { <-release }, nil)

	ctx, cancel := context.WithCancel(context.Background())
	call := start(ctx, st, messages("gave-up", 3))
	<-held
	cancel()
	close(release)
	err := call.wait(t, "the abandoned batch", 30*time.Second)
	wantClasses(t, err, "ok", "retryable", "retryable")
	if e := sinks.Results(err, 3)[1]; !errors.Is(e, context.Canceled) {
		t.Errorf("an unsent record's error is %v, want context.Canceled", e)
	}
	if got := n.Load(); got != 1 {
		t.Errorf("%d produce requests after the caller gave up during the first, want 1", got)
	}
}

// A stream's request that the broker does not answer holds only that
// stream: another stream's batch for the same partition goes on another
// connection and is acknowledged at once, as two slots' batches need no
// order between them.
func TestStreamsDoNotWaitForEachOther(t *testing.T) {
	t.Parallel()
	topic := uniqueTopic(t)
	c := newCluster(t, topic, 1)
	const writeTimeout = 10 * time.Second
	s := newSink(t, Config{Brokers: []string{addr(c)}, Topic: topic, WriteTimeout: writeTimeout})
	if err := s.CheckDestination(context.Background()); err != nil {
		t.Fatalf("check destination: %v", err)
	}
	release := make(chan struct{})
	_, held := holdFirstProduce(c, func(<-chan struct{}) { <-release }, nil)
	ctx := context.Background()

	a, b := s.Stream(), s.Stream()
	first := start(ctx, a, messages("a", 2))
	<-held
	if err := start(ctx, b, messages("b", 2)).wait(t, "the other stream's batch", writeTimeout/2); err != nil {
		t.Fatalf("the other stream's batch: %v", err)
	}
	behind := start(ctx, a, messages("a-next", 2))
	if first.answered() || behind.answered() {
		t.Fatal("the held stream was answered before its request was released")
	}
	close(release)
	for name, call := range map[string]startedCall{"held": first, "behind it": behind} {
		if err := call.wait(t, name, writeTimeout); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	recs := newConsumer(t, addr(c), topic).read(t, 6, 30*time.Second)
	var order []string
	for _, r := range recs {
		order = append(order, recordID(r))
	}
	want := []string{"b-00000", "b-00001", "a-00000", "a-00001", "a-next-00000", "a-next-00001"}
	if !slices.Equal(order, want) {
		t.Errorf("records %v, want %v", order, want)
	}
}
