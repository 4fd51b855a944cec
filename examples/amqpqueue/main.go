// Command amqpqueue declares, reads and deletes a RabbitMQ queue, for the
// README's quick start on a broker without the management plugin:
//
//	go run ./examples/amqpqueue declare orders   # durable queue "orders"
//	go run ./examples/amqpqueue get orders       # print (and take) what it holds
//	go run ./examples/amqpqueue delete orders
//
// The default exchange routes a message to the queue its routing key names,
// so a delaybridge topic "orders" without an exchange of its own (routing
// key: the topic name) delivers into the queue "orders". With -exchange,
// declare also declares that direct exchange and binds the queue to it with
// -key. The broker is DELAYBRIDGE_AMQP_URL, or guest@127.0.0.1.
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
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: amqpqueue [--exchange NAME [--key KEY]] declare|get|delete QUEUE")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 2 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(flag.Arg(0), flag.Arg(1), *exchange, *key); err != nil {
		fmt.Fprintln(os.Stderr, "amqpqueue:", err)
		os.Exit(1)
	}
}

func run(verb, queue, exchange, key string) error {
	url := os.Getenv("DELAYBRIDGE_AMQP_URL")
	if url == "" {
		url = "amqp://guest:guest@127.0.0.1:5672/"
	}
	conn, err := amqp091.Dial(url)
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
	return fmt.Errorf("unknown verb %q: want declare, get or delete", verb)
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
