package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
	"github.com/delaybridge/delaybridge/queue"
)

// TestTraceFollowsEachMessageFromItsFrontDoorToItsConsumer runs the daemon
// with tracing into a Jaeger v2 all-in-one, schedules a message through each
// front door (the Go API, the HTTP API with a traceparent header, the AMQP
// x-delay intake) from a producer span, sets a recurrence, continues each
// delivery's trace in a consumer, and reads the traces back from Jaeger:
// producer → (request or receive) → publish → consumer, one trace each, the
// publish span with its lateness; a tick's publish starts a trace of its own
// linked to the recurrence's producer.
func TestTraceFollowsEachMessageFromItsFrontDoorToItsConsumer(t *testing.T) {
	jaeger := e2etest.StartJaeger(t)
	name := e2etest.Unique(t)
	rdb := e2etest.ConnectRedis(t, name)
	ch, deliveries := traceBroker(t, name)
	const token = "e2e-trace-token-0123456789"
	d := startDaemon(t, map[string]string{
		"DELAYBRIDGE_KEY_PREFIX":                name,
		"DELAYBRIDGE_TOPICS":                    "orders",
		"DELAYBRIDGE_TOPIC_ORDERS_FORMAT":       "envelope",
		"DELAYBRIDGE_TOPIC_ORDERS_EXCHANGE":     name,
		"DELAYBRIDGE_TOPIC_ORDERS_ROUTING_KEY":  "out",
		"DELAYBRIDGE_TOPIC_ORDERS_INTAKE":       "amqp",
		"DELAYBRIDGE_TOPIC_ORDERS_INTAKE_QUEUE": name + "-in",
		"DELAYBRIDGE_API_ADDR":                  "127.0.0.1:0",
		"DELAYBRIDGE_API_TOKENS":                token + ":orders",
		"OTEL_EXPORTER_OTLP_ENDPOINT":           jaeger.OTLP,
		"OTEL_SERVICE_NAME":                     name,
		"OTEL_BSP_SCHEDULE_DELAY":               "100",
	})
	base := "http://" + apiAddr(t, d)
	tp := producerTracing(t, jaeger, name+"-producer")
	tracer := tp.Tracer("producer")
	ctx := context.Background()
	orders := queue.Topic{Name: "orders", Prefix: name, Format: queue.FormatEnvelope}
	q := queue.New(rdb)
	e2etest.WaitFor(t, 30*time.Second, "topic registered", func() bool {
		_, ok, err := q.Layout(ctx, name, "orders")
		return err == nil && ok
	})

	roots := map[string]trace.SpanContext{} // message id → its producer span
	pctx, span := tracer.Start(ctx, "go producer")
	if _, err := q.Schedule(pctx, orders, queue.Message{ID: "go", Body: []byte("g")}, queue.In(time.Second)); err != nil {
		t.Fatal(err)
	}
	span.End()
	roots["go"] = span.SpanContext()

	pctx, span = tracer.Start(ctx, "http producer")
	req, _ := http.NewRequest("POST", base+"/v1/topics/orders/messages", strings.NewReader(`{"id":"http","body":"h","delay":"1s"}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	otel.GetTextMapPropagator().Inject(pctx, propagation.HeaderCarrier(req.Header))
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("schedule over HTTP: %v %v", resp, err)
	}
	resp.Body.Close()
	span.End()
	roots["http"] = span.SpanContext()

	pctx, span = tracer.Start(ctx, "amqp producer")
	headers := amqp.Table{"x-delay": int32(1000)}
	carrier := propagation.MapCarrier{}
	otel.GetTextMapPropagator().Inject(pctx, carrier)
	for k, v := range carrier {
		headers[k] = v
	}
	if err := ch.PublishWithContext(ctx, "", name+"-in", false, false,
		amqp.Publishing{MessageId: "intake", Body: []byte("i"), Headers: headers}); err != nil {
		t.Fatal(err)
	}
	span.End()
	roots["intake"] = span.SpanContext()

	pctx, span = tracer.Start(ctx, "recurrence producer")
	if _, err := q.SetRecurrence(pctx, orders, queue.Recurrence{ID: "tick", Spec: "@every 1s", Message: queue.Message{Body: []byte("t")}}); err != nil {
		t.Fatal(err)
	}
	span.End()
	recurRoot := span.SpanContext()

	consumed := consume(t, tracer, deliveries, 4)
	if _, err := q.RemoveRecurrence(ctx, orders, "tick"); err != nil {
		t.Fatal(err)
	}
	if err := tp.ForceFlush(ctx); err != nil {
		t.Fatal(err)
	}
	stop(t, d) // flushes the daemon's spans

	for id, root := range roots {
		checkTrace(t, jaeger, id, root.TraceID().String(), root.SpanID().String(), consumed[id])
	}
	checkTick(t, jaeger, recurRoot, consumed)
}
