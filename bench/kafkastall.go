package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/delaybridge/delaybridge/internal/testing/faultproxy"
)

// kafka-stall's shape (chaos/stall_test.go's): messages due from stallFirst
// to stallLast after the start, the broker stalled from stallAt for
// stallFor, and judged are the messages due stallJudged or more after the
// stall ended.
const (
	stallFirst  = 2 * time.Second
	stallLast   = 24 * time.Second
	stallAt     = 6 * time.Second
	stallFor    = 10 * time.Second
	stallJudged = 2 * time.Second
)

// advertised is a listener that tells Kafka clients to connect elsewhere:
// kfake advertises its listener's address in metadata, so this puts the
// fault proxy between the daemon and the broker for every connection.
type advertised struct {
	net.Listener
	addr net.Addr
}

func (l advertised) Addr() net.Addr { return l.addr }

// proxyAddr is a TCP address given as text.
type proxyAddr struct{ s string }

func (a proxyAddr) Network() string { return "tcp" }
func (a proxyAddr) String() string  { return a.s }

// stalledKafka is an in-process one-broker kfake behind a fault proxy.
type stalledKafka struct {
	cluster *kfake.Cluster
	proxy   *faultproxy.Proxy
	real    string // the broker's own address, for the consumer
}

func startStalledKafka(topic string) (*stalledKafka, error) {
	k := &stalledKafka{}
	listen := func(network, address string) (net.Listener, error) {
		ln, err := net.Listen(network, address)
		if err != nil {
			return nil, err
		}
		k.real = ln.Addr().String()
		k.proxy, err = faultproxy.New(context.Background(), k.real)
		if err != nil {
			ln.Close()
			return nil, err
		}
		return advertised{Listener: ln, addr: proxyAddr{k.proxy.Addr()}}, nil
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(kafkaPartitions, topic), kfake.ListenFn(listen))
	if err != nil {
		if k.proxy != nil {
			k.proxy.Close()
		}
		return nil, fmt.Errorf("kfake cluster: %w", err)
	}
	k.cluster = c
	return k, nil
}

func (k *stalledKafka) close() {
	k.cluster.Close()
	k.proxy.Close()
}

// around dials the broker itself where metadata names the proxy, so the
// bench's consumer is never stalled.
func (k *stalledKafka) around(ctx context.Context, network, host string) (net.Conn, error) {
	if host == k.proxy.Addr() {
		host = k.real
	}
	var d net.Dialer
	return d.DialContext(ctx, network, host)
}

// runKafkaStall: stallRate messages/s over 8 slots through the Kafka sink to
// a kfake behind a fault proxy that stalls (accepts, forwards nothing) for
// stallFor; the lateness of the messages due stallJudged after it ended,
// and how long the backlog took to drain.
func runKafkaStall(ctx context.Context, e *env) (Scenario, error) {
	slots := e.o.sizes.steadySlots
	n := e.o.sizes.stallRate * int((stallLast-stallFirst)/time.Second)
	r := Scenario{Messages: n}
	prefix := e.prefix("kafka-stall")
	defer e.dropKeys(prefix)
	k, err := startStalledKafka(prefix)
	if err != nil {
		return r, err
	}
	defer k.close()
	vars := map[string]string{
		"DELAYBRIDGE_KEY_PREFIX":              prefix,
		"DELAYBRIDGE_TOPICS":                  "bench",
		"DELAYBRIDGE_TOPIC_BENCH_SINK":        "kafka",
		"DELAYBRIDGE_TOPIC_BENCH_SLOTS":       fmt.Sprint(slots),
		"DELAYBRIDGE_TOPIC_BENCH_KAFKA_TOPIC": prefix,
		"DELAYBRIDGE_KAFKA_BROKERS":           k.proxy.Addr(),
	}
	d, err := startDaemon(ctx, e, vars, slots)
	if err != nil {
		return r, err
	}
	defer d.finish(e.o.keepLogs)
	tr := newTracker(n)
	stop, err := consumeKafka(k.real, prefix, tr, kgo.Dialer(k.around))
	if err != nil {
		return r, err
	}
	defer stop()

	start := time.Now()
	w := e.startWindow(ctx, d)
	msgs := make([]scheduled, n)
	for i := range msgs {
		due := start.Add(stallFirst + (stallLast-stallFirst)*time.Duration(i)/time.Duration(n)).UnixMilli()
		msgs[i] = scheduled{member: body(i, due, e.o.size), score: float64(due)}
	}
	if err := e.schedule(ctx, benchTopic(prefix, slots), msgs); err != nil {
		return r, err
	}
	if !sleepUntil(ctx, start.Add(stallAt)) {
		return r, ctx.Err()
	}
	k.proxy.Stall()
	if !sleepUntil(ctx, time.Now().Add(stallFor)) {
		k.proxy.Restore()
		return r, ctx.Err()
	}
	k.proxy.Restore()
	restored := time.Now()
	all := tr.wait(start.Add(stallLast+2*time.Minute), 30*time.Second)
	w.end(ctx, &r)
	stop()
	out := tr.outcome()
	out.fill(&r)
	e.dump("kafka-stall", tr)
	if !all {
		r.Notes = append(r.Notes, fmt.Sprintf("only %d of %d arrived", out.received, n))
	}
	r.stallOutcome(tr, restored)
	r.Notes = append(r.Notes, d.failures()...)
	r.checkAlways()
	return r, nil
}

// stallOutcome replaces r's lateness with that of the messages due
// stallJudged or more after restored (the whole run's goes to the notes)
// and notes how long the backlog took to drain.
func (r *Scenario) stallOutcome(tr *tracker, restored time.Time) {
	judgedFrom := restored.Add(stallJudged).UnixMilli()
	var late []float64
	var drained int64
	for i, at := range tr.recv {
		if at == 0 {
			continue
		}
		if tr.due[i] >= judgedFrom {
			late = append(late, float64(at-tr.due[i]*int64(time.Millisecond))/1e6)
		}
		if tr.due[i] < restored.UnixMilli() {
			drained = max(drained, at)
		}
	}
	whole := r.Lateness
	r.Lateness = latenessOf(late)
	drain := time.Duration(drained - restored.UnixNano())
	r.DrainS = round2(drain.Seconds())
	r.Notes = append(r.Notes, fmt.Sprintf("stalled %s from %s after the start; the messages due before the restore were all delivered %.2f s after it; lateness is of the %d messages due ≥ %s after the restore (of all %d: p50 %.1f / p99 %.1f / max %.1f ms)",
		stallFor, stallAt, drain.Seconds(), len(late), stallJudged, len(tr.recv), whole.P50, whole.P99, whole.Max))
	r.target("max lateness of messages due ≥ 2 s after a 10 s stall", r.Lateness.Max, "<=", 200, "ms")
	if len(late) == 0 {
		r.Notes = append(r.Notes, "no message was judged: none due that late was received")
	}
	fmt.Fprintf(os.Stderr, "   kafka stall: drained %.2f s after restore; due ≥ %s after: p50 %.1f ms, p99 %.1f ms, max %.1f ms; %d lost, %d early, %d dup\n",
		drain.Seconds(), stallJudged, r.Lateness.P50, r.Lateness.P99, r.Lateness.Max, r.Lost, r.Early, r.Duplicates)
}

// sleepUntil sleeps until t or ctx ends; it reports whether t came.
func sleepUntil(ctx context.Context, t time.Time) bool {
	select {
	case <-time.After(time.Until(t)):
		return true
	case <-ctx.Done():
		return false
	}
}
