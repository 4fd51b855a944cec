package kafka

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkPublish measures one synchronous Publish against kfake over TCP.
func BenchmarkPublish(b *testing.B) {
	for _, n := range []int{1, 100, 500} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			topic := "bench-" + strconv.Itoa(n)
			c := newClusterB(b, topic)
			s, err := New(Config{Brokers: []string{addr(c)}, Topic: topic}, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			msgs := messages("bench", n)
			for i := range msgs {
				msgs[i].Body = make([]byte, 100)
			}
			ctx := context.Background()
			b.ResetTimer()
			for b.Loop() {
				if err := s.Publish(ctx, msgs); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}

// BenchmarkSlots publishes like the forwarder's slots: 8 slots of 500-message
// batches, each slot with one Publish at a time (sync) or two Start calls in
// flight on a stream of its own (stream), to a kfake cluster that holds every produce request for
// latency before answering, as a broker waiting for its replicas would.
func BenchmarkSlots(b *testing.B) {
	for _, latency := range []time.Duration{0, 20 * time.Millisecond} {
		for _, parts := range []int32{1, 8} {
			for _, mode := range []string{"sync", "stream"} {
				b.Run(fmt.Sprintf("latency=%v/partitions=%d/%s", latency, parts, mode), func(b *testing.B) {
					benchSlots(b, latency, parts, mode)
				})
			}
		}
	}
}

func benchSlots(b *testing.B, latency time.Duration, parts int32, mode string) {
	const slots, batch, depth = 8, 500, 2
	topic := fmt.Sprintf("bench-%d", parts)
	c, err := kfake.NewCluster(kfake.Ports(0), kfake.SeedTopics(parts, topic))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	if latency > 0 {
		c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
			c.KeepControl()
			c.SleepControl(func() { time.Sleep(latency) })
			return nil, nil, false
		})
	}
	s, err := New(Config{Brokers: []string{addr(c)}, Topic: topic}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	msgs := messages("bench", batch)
	for i := range msgs {
		msgs[i].Body = make([]byte, 128)
	}
	ctx := context.Background()
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for range slots {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sm := s.Stream()
			var inflight []startedCall
			for next.Add(1) <= int64(b.N) {
				if mode == "sync" {
					if err := s.Publish(ctx, msgs); err != nil {
						b.Error(err)
					}
					continue
				}
				if len(inflight) == depth {
					<-inflight[0].done
					if err := inflight[0].result(); err != nil {
						b.Error(err)
					}
					inflight = inflight[1:]
				}
				inflight = append(inflight, start(ctx, sm, msgs))
			}
			for _, call := range inflight {
				<-call.done
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "msgs/s")
}
