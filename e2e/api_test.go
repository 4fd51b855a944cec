package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
)

// apiAddr is the address the daemon's HTTP API announced in its log.
func apiAddr(t *testing.T, d *e2etest.Daemon) string {
	t.Helper()
	var addr string
	e2etest.WaitFor(t, 30*time.Second, "api listening", func() bool {
		for _, rec := range d.Records("api listening") {
			var r struct {
				Addr string `json:"addr"`
			}
			if json.Unmarshal(rec, &r) == nil && r.Addr != "" {
				addr = r.Addr
				return true
			}
		}
		return false
	})
	return addr
}

// TestHTTPScheduledMessageIsDeliveredOnTimeAndCancelledOneNever runs the
// daemon with its HTTP API, schedules two messages over HTTP with headers
// and a routing key, cancels one over HTTP, and reads RabbitMQ: the first
// arrives at its due time (never before) with its id, headers and routing
// key; the cancelled one never arrives.
func TestHTTPScheduledMessageIsDeliveredOnTimeAndCancelledOneNever(t *testing.T) {
	t.Parallel()
	name := e2etest.Unique(t)
	rdb := e2etest.ConnectRedis(t, name)
	conn, err := amqp.Dial(e2etest.AMQPURL())
	if err != nil {
		t.Fatalf("rabbitmq at %s is required: %v", e2etest.AMQPURL(), err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.ExchangeDeclare(name, "direct", false, true, false, false, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ch.ExchangeDelete(name, false, false) })
	qd, err := ch.QueueDeclare("", false, true, true, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.QueueBind(qd.Name, "eu.orders", name, false, nil); err != nil {
		t.Fatal(err)
	}
	msgs, err := ch.Consume(qd.Name, "", true, true, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	const token = "e2e-api-token-0123456789"
	d := startDaemon(t, map[string]string{
		"DELAYBRIDGE_KEY_PREFIX":               name,
		"DELAYBRIDGE_TOPICS":                   "orders",
		"DELAYBRIDGE_TOPIC_ORDERS_FORMAT":      "envelope",
		"DELAYBRIDGE_TOPIC_ORDERS_SLOTS":       "4",
		"DELAYBRIDGE_TOPIC_ORDERS_EXCHANGE":    name,
		"DELAYBRIDGE_TOPIC_ORDERS_ROUTING_KEY": "unbound",
		// The keys the requests send (a routing_key is refused without).
		"DELAYBRIDGE_TOPIC_ORDERS_ROUTING_KEYS": "eu.*",
		"DELAYBRIDGE_API_ADDR":                  "127.0.0.1:0",
		"DELAYBRIDGE_API_TOKENS":                token + ":orders",
	})
	base := "http://" + apiAddr(t, d)
	client := &http.Client{Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	call := func(method, path, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var out map[string]any
		_ = json.Unmarshal(b, &out)
		return resp.StatusCode, out
	}
	// The daemon registers its topics just after the API starts listening.
	e2etest.WaitFor(t, 30*time.Second, "topic registered", func() bool {
		s, out := call("GET", "/v1/topics", "")
		return s == http.StatusOK && strings.Contains(fmt.Sprint(out["topics"]), "orders")
	})

	status, kept := call("POST", "/v1/topics/orders/messages",
		`{"id":"order-42","body":{"order":42},"headers":{"tenant":"acme"},"routing_key":"eu.orders","delay":"2s"}`)
	if status != http.StatusCreated {
		t.Fatalf("schedule: %d %v", status, kept)
	}
	due := time.UnixMilli(int64(kept["due_ms"].(float64)))
	status, gone := call("POST", "/v1/topics/orders/messages", `{"id":"order-43","body":"cancelled","routing_key":"eu.orders","delay":"2s"}`)
	if status != http.StatusCreated {
		t.Fatalf("schedule: %d %v", status, gone)
	}
	if status, out := call("DELETE", "/v1/topics/orders/messages/order-43", ""); status != http.StatusNoContent {
		t.Fatalf("cancel: %d %v", status, out)
	}
	if status, out := call("GET", "/v1/topics/orders/messages/order-42", ""); status != http.StatusOK || out["state"] != "scheduled" {
		t.Errorf("get: %d %v", status, out)
	}

	select {
	case got := <-msgs:
		arrived := time.Now()
		if got.MessageId != "order-42" || string(got.Body) != `{"order":42}` || got.RoutingKey != "eu.orders" || got.Headers["tenant"] != "acme" {
			t.Errorf("delivered id %q body %q routing key %q headers %v", got.MessageId, got.Body, got.RoutingKey, got.Headers)
		}
		if arrived.Before(due) {
			t.Errorf("delivered %s before its due time %s", due.Sub(arrived), due)
		}
		// On time: the pipeline is idle, so well within a second of its due
		// time even on a loaded machine.
		if late := arrived.Sub(due); late > 2*time.Second {
			t.Errorf("delivered %s late", late)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no delivery")
	}
	select {
	case extra := <-msgs:
		t.Errorf("the cancelled message was delivered: id %q body %q", extra.MessageId, extra.Body)
	case <-time.After(time.Until(due.Add(2 * time.Second))):
	}
	if status, out := call("GET", "/v1/topics/orders/messages/order-42", ""); status != http.StatusNotFound {
		t.Errorf("get after delivery: %d %v", status, out)
	}
	stop(t, d)
	expectEmpty(t, rdb, name)
}
