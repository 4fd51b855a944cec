// Command demo shows delaybridge end to end: it starts the daemon, schedules
// a few messages with plain ZADD, consumes them from RabbitMQ (or Kafka
// through devkafka) and prints each with its lateness.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"
)

func main() {
	sink := flag.String("sink", "amqp", "amqp, kafka, or intake (x-delay messages from RabbitMQ)")
	daemon := flag.String("daemon", "bin/delaybridge", "delaybridge binary")
	devkafka := flag.String("devkafka", "bin/devkafka", "devkafka binary (kafka demo)")
	redisURL := flag.String("redis", "redis://127.0.0.1:6379/0", "Redis URL")
	amqpURL := flag.String("amqp", "amqp://guest:guest@127.0.0.1:5672/", "RabbitMQ URL")
	kafkaAddr := flag.String("kafka", "127.0.0.1:19092", "address for devkafka (kafka demo)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *sink, *daemon, *devkafka, *redisURL, *amqpURL, *kafkaAddr); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

type received struct {
	body string
	due  int64
	at   time.Time
}

func run(ctx context.Context, sink, daemon, devkafka, redisURL, amqpURL, kafkaAddr string) error {
	prefix := fmt.Sprintf("demo%d", time.Now().UnixNano())
	opt, err := redis.ParseURL(redisURL)
	if err != nil {
		return err
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	defer cleanRedis(rdb, prefix)

	env := append(os.Environ(),
		"DELAYBRIDGE_REDIS_URL="+redisURL, "DELAYBRIDGE_AMQP_URL="+amqpURL,
		"DELAYBRIDGE_KEY_PREFIX="+prefix, "DELAYBRIDGE_TOPICS=reminders",
		"DELAYBRIDGE_HTTP_ADDR=127.0.0.1:0", "DELAYBRIDGE_LOG_FORMAT=text", "DELAYBRIDGE_LOG_LEVEL=warn")
	got := make(chan received, 16)
	switch sink {
	case "intake":
		return runIntake(ctx, daemon, redisURL, amqpURL, prefix, env)
	case "amqp":
		closeMQ, err := consumeAMQP(amqpURL, prefix, got)
		if err != nil {
			return err
		}
		defer closeMQ()
		env = append(env, "DELAYBRIDGE_TOPIC_REMINDERS_EXCHANGE="+prefix, "DELAYBRIDGE_TOPIC_REMINDERS_ROUTING_KEY=reminders")
	case "kafka":
		broker := exec.Command(devkafka, "-addr", kafkaAddr, "-topics", "reminders")
		broker.Stderr = os.Stderr
		if err := broker.Start(); err != nil {
			return fmt.Errorf("start devkafka: %w", err)
		}
		defer func() { broker.Process.Signal(syscall.SIGTERM); broker.Wait() }()
		time.Sleep(500 * time.Millisecond)
		closeK := consumeKafka(ctx, kafkaAddr, got)
		defer closeK()
		env = append(env, "DELAYBRIDGE_TOPIC_REMINDERS_SINK=kafka", "DELAYBRIDGE_KAFKA_BROKERS="+kafkaAddr)
	default:
		return fmt.Errorf("unknown sink %q", sink)
	}

	d := exec.Command(daemon, "run")
	d.Env = env
	d.Stderr = os.Stderr
	if err := d.Start(); err != nil {
		return fmt.Errorf("start delaybridge: %w", err)
	}
	defer func() { d.Process.Signal(syscall.SIGTERM); d.Wait() }()

	fmt.Printf("scheduling 5 reminders in Redis (ZADD %s:{reminders:0} <due ms> <body>)\n", prefix)
	now := time.Now()
	for i := 1; i <= 5; i++ {
		due := now.Add(time.Duration(i) * time.Second)
		body := fmt.Sprintf(`{"reminder":%d,"in":"%ds"}`, i, i)
		if err := rdb.ZAdd(ctx, prefix+":{reminders:0}", redis.Z{Score: float64(due.UnixMilli()), Member: body}).Err(); err != nil {
			return fmt.Errorf("schedule: %w", err)
		}
	}
	for i := 0; i < 5; i++ {
		select {
		case r := <-got:
			late := r.at.Sub(time.UnixMilli(r.due))
			fmt.Printf("received %-28s due %s  late %6.1f ms\n", r.body, time.UnixMilli(r.due).Format("15:04:05.000"), float64(late.Microseconds())/1000)
		case <-time.After(20 * time.Second):
			return fmt.Errorf("only %d of 5 messages arrived", i)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	fmt.Println("all 5 arrived on time; stopping")
	return nil
}

func consumeAMQP(url, name string, got chan<- received) (func(), error) {
	conn, err := amqp.Dial(url)
	if err != nil {
		return nil, fmt.Errorf("rabbitmq: %w", err)
	}
	ch, err := conn.Channel()
	if err != nil {
		return nil, err
	}
	if err := ch.ExchangeDeclare(name, "direct", false, true, false, false, nil); err != nil {
		return nil, err
	}
	q, err := ch.QueueDeclare("", false, true, true, false, nil)
	if err != nil {
		return nil, err
	}
	if err := ch.QueueBind(q.Name, "reminders", name, false, nil); err != nil {
		return nil, err
	}
	msgs, err := ch.Consume(q.Name, "", true, true, false, false, nil)
	if err != nil {
		return nil, err
	}
	go func() {
		for m := range msgs {
			due, _ := m.Headers["x-delaybridge-due"].(int64)
			got <- received{string(m.Body), due, time.Now()}
		}
	}()
	return func() { ch.ExchangeDelete(name, false, false); conn.Close() }, nil
}

func consumeKafka(ctx context.Context, addr string, got chan<- received) func() {
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{addr}, Topic: "reminders", MaxWait: 500 * time.Millisecond})
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		for {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				return
			}
			var due int64
			for _, h := range m.Headers {
				if h.Key == "x-delaybridge-due" {
					due, _ = strconv.ParseInt(string(h.Value), 10, 64)
				}
			}
			got <- received{string(m.Value), due, time.Now()}
		}
	}()
	return func() { cancel(); r.Close() }
}

func cleanRedis(rdb *redis.Client, prefix string) {
	ctx := context.Background()
	keys, _ := rdb.Keys(ctx, prefix+"*").Result()
	if len(keys) > 0 {
		rdb.Del(ctx, keys...)
	}
}
