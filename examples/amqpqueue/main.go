// Command amqpqueue declares, reads and deletes a RabbitMQ queue, and
// publishes a test message, for the README's quick start and the migration
// guide on a broker without the management plugin:
//
//	go run ./examples/amqpqueue declare orders   # durable queue "orders"
//	go run ./examples/amqpqueue get orders       # print (and take) what it holds
//	go run ./examples/amqpqueue delete orders
//	go run ./examples/amqpqueue --x-delay 5000 publish orders '{"order":42}'
//
// The default exchange routes a message to the queue its routing key names,
// so a delaybridge topic "orders" without an exchange of its own (routing
// key: the topic name) delivers into the queue "orders". With -exchange,
// declare also declares that direct exchange and binds the queue to it with
// -key. publish sends BODY (persistent, mandatory, confirmed) with routing
// key KEY to -exchange (default: the default exchange, where KEY names the
// queue), with the header x-delay when -x-delay is given: what a producer
// of the delayed-message plugin sends, for delaybridge's intake. The broker
// is DELAYBRIDGE_AMQP_URL, or guest@127.0.0.1.
package main

import (
	"flag"
	"fmt"
	"os"
	"sort"

	amqp091 "github.com/rabbitmq/amqp091-go"
)

func main() {
	exchange := flag.String("exchange", "", "declare: also declare this direct exchange and bind the queue to it")
	key := flag.String("key", "", "declare: the binding key with --exchange (default: the queue name)")
	delay := flag.Int64("x-delay", -1, "publish: the x-delay header, in milliseconds (default: none)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: amqpqueue [--exchange NAME [--key KEY]] declare|get|delete QUEUE\n       amqpqueue [--exchange NAME] [--x-delay MS] publish KEY BODY")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 2 && !(flag.NArg() == 3 && flag.Arg(0) == "publish") {
		flag.Usage()
		os.Exit(2)
	}
	if flag.Arg(0) == "publish" {
		err := publish(os.Stdout, amqpURL(), *exchange, flag.Arg(1), []byte(flag.Arg(2)), *delay)
		if err != nil {
			fmt.Fprintln(os.Stderr, "amqpqueue:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(flag.Arg(0), flag.Arg(1), *exchange, *key); err != nil {
		fmt.Fprintln(os.Stderr, "amqpqueue:", err)
		os.Exit(1)
	}
}

// amqpURL is DELAYBRIDGE_AMQP_URL, or the local guest broker.
func amqpURL() string {
	if url := os.Getenv("DELAYBRIDGE_AMQP_URL"); url != "" {
		return url
	}
	return "amqp://guest:guest@127.0.0.1:5672/"
}

func run(verb, queue, exchange, key string) error {
	conn, err := amqp091.Dial(amqpURL())
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return fmt.Errorf("open channel: %w", err)
	}
	switch verb {
	case "declare":
		return declare(ch, queue, exchange, key)
	case "get":
		return get(ch, queue)
	case "delete":
		n, err := ch.QueueDelete(queue, false, false, false)
		if err == nil {
			fmt.Printf("deleted queue %s (%s)\n", queue, messages(n))
		}
		return err
	}
	return fmt.Errorf("unknown verb %q: want declare, get, delete or publish", verb)
}

func declare(ch *amqp091.Channel, queue, exchange, key string) error {
	if _, err := ch.QueueDeclare(queue, true, false, false, false, nil); err != nil {
		return fmt.Errorf("declare queue %s: %w", queue, err)
	}
	if exchange == "" {
		fmt.Printf("declared queue %s (the default exchange routes key %q to it)\n", queue, queue)
		return nil
	}
	if key == "" {
		key = queue
	}
	if err := ch.ExchangeDeclare(exchange, amqp091.ExchangeDirect, true, false, false, false, nil); err != nil {
		return fmt.Errorf("declare exchange %s: %w", exchange, err)
	}
	if err := ch.QueueBind(queue, key, exchange, false, nil); err != nil {
		return fmt.Errorf("bind queue %s to %s: %w", queue, exchange, err)
	}
	fmt.Printf("declared queue %s, bound to exchange %s with key %q\n", queue, exchange, key)
	return nil
}

// get takes every message waiting in queue and prints it with its headers.
func get(ch *amqp091.Channel, queue string) error {
	n := 0
	for {
		m, ok, err := ch.Get(queue, true)
		if err != nil {
			return fmt.Errorf("get from %s: %w", queue, err)
		}
		if !ok {
			break
		}
		n++
		names := make([]string, 0, len(m.Headers))
		for k := range m.Headers {
			names = append(names, k)
		}
		sort.Strings(names)
		fmt.Printf("%s  id=%s", m.Body, m.MessageId)
		for _, k := range names {
			fmt.Printf(" %s=%v", k, m.Headers[k])
		}
		fmt.Println()
	}
	fmt.Printf("(%s)\n", messages(n))
	return nil
}

// messages is "1 message" or "n messages".
func messages(n int) string {
	if n == 1 {
		return "1 message"
	}
	return fmt.Sprintf("%d messages", n)
}
