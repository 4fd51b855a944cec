package kafka

import (
	"context"
	"strconv"
	"testing"
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
