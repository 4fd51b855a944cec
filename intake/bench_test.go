package intake

import (
	"context"
	"fmt"
	"testing"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/delaybridge/delaybridge/queue"
)

// BenchmarkAMQPIntakeBacklog measures the AMQP intake alone: b.N messages
// in the style of the delayed-message plugin (x-delay, no message id) wait
// in the intake queue; the time is from the intake's start to all of them
// being scheduled. Profile with -cpuprofile.
func BenchmarkAMQPIntakeBacklog(b *testing.B) {
	r := newRabbit(b)
	f := newFixture(b, 8)
	confirms := r.ch.NotifyPublish(make(chan amqp091.Confirmation, b.N))
	if err := r.ch.Confirm(false); err != nil {
		b.Fatal(err)
	}
	for i := range b.N {
		p := amqp091.Publishing{
			Headers:      amqp091.Table{HeaderDelay: int64(0)},
			DeliveryMode: amqp091.Persistent,
			Body:         []byte(fmt.Sprintf("%08d %0120d", i, 0)), // 128 bytes, as the bench's
		}
		if err := r.ch.PublishWithContext(context.Background(), r.In, "k", false, false, p); err != nil {
			b.Fatal(err)
		}
	}
	for range b.N {
		<-confirms
	}
	b.ResetTimer()
	in, err := NewAMQP(AMQPConfig{URL: amqpURL(), Queue: r.Queue},
		Target{Topic: f.topic}, queue.New(f.rdb), f.metrics, testLog(b))
	if err != nil {
		b.Fatal(err)
	}
	stop := run(b, in.Run)
	deadline := time.Now().Add(5 * time.Minute)
	for f.counter(f.metrics.Scheduled, f.topic.Name) < float64(b.N) {
		if time.Now().After(deadline) {
			b.Fatalf("%v of %d scheduled after 5 minutes", f.counter(f.metrics.Scheduled, f.topic.Name), b.N)
		}
		time.Sleep(2 * time.Millisecond)
	}
	b.StopTimer()
	stop()
}
