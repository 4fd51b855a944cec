package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/delaybridge/delaybridge/internal/testing/redistest"
	"github.com/delaybridge/delaybridge/queue"
)

func amqpURL() string {
	if u := os.Getenv("DELAYBRIDGE_TEST_AMQP_URL"); u != "" {
		return u
	}
	return "amqp://guest:guest@127.0.0.1:5672/"
}

func uniqueName(prefix string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// amqpTopicEnv configures one topic, "orders", publishing to exchange with
// routing key "k", under a key prefix of the test's own.
func amqpTopicEnv(t *testing.T, exchange string) (*queue.Queue, queue.Topic) {
	t.Helper()
	rdb, prefix := redistest.New(t)
	t.Setenv("DELAYBRIDGE_REDIS_URL", redistest.URL())
	t.Setenv("DELAYBRIDGE_AMQP_URL", amqpURL())
	t.Setenv("DELAYBRIDGE_KEY_PREFIX", prefix)
	t.Setenv("DELAYBRIDGE_TOPICS", "orders")
	t.Setenv("DELAYBRIDGE_TOPIC_ORDERS_EXCHANGE", exchange)
	t.Setenv("DELAYBRIDGE_TOPIC_ORDERS_ROUTING_KEY", "k")
	return queue.New(rdb), queue.Topic{Name: "orders", Prefix: prefix, Slots: 1, Format: queue.FormatRaw}
}

// declareBound declares exchange and a queue bound to it with key "k",
// deleted when the test ends.
func declareBound(t *testing.T, exchange string) (*amqp091.Channel, string) {
	t.Helper()
	conn, err := amqp091.Dial(amqpURL())
	if err != nil {
		t.Fatalf("RabbitMQ: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	q := exchange + ".q"
	if err := ch.ExchangeDeclare(exchange, "direct", false, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare(q, false, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := ch.QueueBind(q, "k", exchange, false, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = ch.QueueDelete(q, false, false, false)
		_ = ch.ExchangeDelete(exchange, false, false)
	})
	return ch, q
}

func TestCheckFailsForAMissingExchangeUntilDeclared(t *testing.T) {
	exchange := uniqueName("dbtest.check.")
	amqpTopicEnv(t, exchange)
	e := &cliEnv{t: t, ctx: context.Background()}
	code, out, errs := e.run("", "check")
	if code != exitFail || !strings.Contains(out, "topic orders (amqp): FAILED") || !strings.Contains(out, exchange) {
		t.Fatalf("check of a missing exchange: exit %d, want %d naming the topic and %s\nstdout: %s\nstderr: %s", code, exitFail, exchange, out, errs)
	}
	declareBound(t, exchange)
	if code, out, errs := e.run("", "check", "--json"); code != exitOK || !strings.Contains(out, `"ok":true`) {
		t.Fatalf("check after declaring: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
}

func TestCheckFailsFastOnAWrongAMQPPassword(t *testing.T) {
	amqpTopicEnv(t, "")
	bad := strings.Replace(amqpURL(), ":guest@", ":wrong-password@", 1)
	if bad == amqpURL() {
		t.Skip("DELAYBRIDGE_TEST_AMQP_URL has no guest password to spoil")
	}
	t.Setenv("DELAYBRIDGE_AMQP_URL", bad)
	e := &cliEnv{t: t, ctx: context.Background()}
	start := time.Now()
	code, out, errs := e.run("", "check")
	took := time.Since(start)
	if code != exitFail || !strings.Contains(out, "credentials refused") || strings.Contains(out+errs, "wrong-password") {
		t.Fatalf("check with a wrong password: exit %d, want %d saying the credentials were refused (password hidden)\nstdout: %s\nstderr: %s", code, exitFail, out, errs)
	}
	if took > 5*time.Second {
		t.Errorf("check with a wrong password took %s, want < 5s", took)
	}
}

func TestCheckFailsForAMissingKafkaTopicUntilCreated(t *testing.T) {
	c, err := kfake.NewCluster(kfake.Ports(0), kfake.SeedTopics(1, "other"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	topic := uniqueName("dbtest-")
	redistest.New(t)
	t.Setenv("DELAYBRIDGE_REDIS_URL", redistest.URL())
	t.Setenv("DELAYBRIDGE_AMQP_URL", "")
	t.Setenv("DELAYBRIDGE_KAFKA_BROKERS", c.ListenAddrs()[0])
	t.Setenv("DELAYBRIDGE_TOPICS", "events")
	t.Setenv("DELAYBRIDGE_TOPIC_EVENTS_SINK", "kafka")
	t.Setenv("DELAYBRIDGE_TOPIC_EVENTS_KAFKA_TOPIC", topic)
	e := &cliEnv{t: t, ctx: context.Background()}
	code, out, errs := e.run("", "check")
	if code != exitFail || !strings.Contains(out, "topic events (kafka): FAILED") || !strings.Contains(out, topic) {
		t.Fatalf("check of a missing kafka topic: exit %d, want %d naming it\nstdout: %s\nstderr: %s", code, exitFail, out, errs)
	}
	createKafkaTopic(t, c.ListenAddrs()[0], topic)
	if code, out, errs := e.run("", "check"); code != exitOK {
		t.Fatalf("check after creating the topic: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
}

func createKafkaTopic(t *testing.T, brokers, topic string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, 1, 1
	req.Topics = append(req.Topics, rt)
	if _, err := req.RequestWith(context.Background(), cl); err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
}

// TestReadyzNamesAMissingExchangeAndNothingIsLost: the daemon keeps running
// while the exchange is missing, /readyz says which, an ERROR log names it,
// and a message scheduled meanwhile arrives once the exchange exists.
func TestReadyzNamesAMissingExchangeAndNothingIsLost(t *testing.T) {
	exchange := uniqueName("dbtest.readyz.")
	q, topic := amqpTopicEnv(t, exchange)
	t.Setenv("DELAYBRIDGE_RETRY_BACKOFF", "100ms")
	t.Setenv("DELAYBRIDGE_RETRY_BACKOFF_MAX", "500ms")
	d := startDaemon(t)
	d.waitReadyz(20*time.Second, "503 naming the exchange", func(code int, body string) bool {
		return code == http.StatusServiceUnavailable && strings.Contains(body, "topic orders") && strings.Contains(body, exchange)
	})
	ctx := context.Background()
	if _, err := q.ScheduleMember(ctx, topic, []byte("kept"), queue.In(0)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(d.logs.String(), `"level":"ERROR","msg":"destination missing`) {
		t.Errorf("no ERROR log about the missing destination:\n%s", d.logs.String())
	}
	time.Sleep(500 * time.Millisecond) // a publish or two is refused meanwhile
	ch, queueName := declareBound(t, exchange)
	d.waitReadyz(20*time.Second, "200", func(code int, _ string) bool { return code == http.StatusOK })
	deadline := time.Now().Add(20 * time.Second)
	for {
		m, ok, err := ch.Get(queueName, true)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			if string(m.Body) != "kept" {
				t.Errorf("got %q, want kept", m.Body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the message scheduled while the exchange was missing never arrived; logs:\n%s", d.logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(d.logs.String(), `"level":"WARN","msg":"publish refused: destination missing`) {
		t.Errorf("no WARN about the refused publish:\n%s", d.logs.String())
	}
	if code := d.stop(30 * time.Second); code != exitOK {
		t.Errorf("daemon exit %d", code)
	}
}

// TestReadyzNamesAMissingKafkaTopicAndNothingIsLost: as for an exchange,
// with a Kafka topic nobody created.
func TestReadyzNamesAMissingKafkaTopicAndNothingIsLost(t *testing.T) {
	c, err := kfake.NewCluster(kfake.Ports(0), kfake.SeedTopics(1, "other"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	brokers, kafkaTopic := c.ListenAddrs()[0], uniqueName("dbtest-")
	rdb, prefix := redistest.New(t)
	t.Setenv("DELAYBRIDGE_REDIS_URL", redistest.URL())
	t.Setenv("DELAYBRIDGE_AMQP_URL", "")
	t.Setenv("DELAYBRIDGE_KEY_PREFIX", prefix)
	t.Setenv("DELAYBRIDGE_KAFKA_BROKERS", brokers)
	t.Setenv("DELAYBRIDGE_TOPICS", "events")
	t.Setenv("DELAYBRIDGE_TOPIC_EVENTS_SINK", "kafka")
	t.Setenv("DELAYBRIDGE_TOPIC_EVENTS_KAFKA_TOPIC", kafkaTopic)
	t.Setenv("DELAYBRIDGE_RETRY_BACKOFF", "100ms")
	t.Setenv("DELAYBRIDGE_RETRY_BACKOFF_MAX", "500ms")
	d := startDaemon(t)
	d.waitReadyz(20*time.Second, "503 naming the kafka topic", func(code int, body string) bool {
		return code == http.StatusServiceUnavailable && strings.Contains(body, "topic events") && strings.Contains(body, kafkaTopic)
	})
	events := queue.Topic{Name: "events", Prefix: prefix, Slots: 1, Format: queue.FormatRaw}
	if _, err := queue.New(rdb).ScheduleMember(context.Background(), events, []byte("kept"), queue.In(0)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	createKafkaTopic(t, brokers, kafkaTopic)
	d.waitReadyz(20*time.Second, "200", func(code int, _ string) bool { return code == http.StatusOK })

	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.ConsumeTopics(kafkaTopic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	fetches := cl.PollFetches(ctx)
	if errs := fetches.Errors(); len(errs) > 0 {
		t.Fatalf("consume %s: %v; logs:\n%s", kafkaTopic, errs, d.logs.String())
	}
	if recs := fetches.Records(); len(recs) != 1 || string(recs[0].Value) != "kept" {
		t.Fatalf("records %v, want the one scheduled while the topic was missing", recs)
	}
}
