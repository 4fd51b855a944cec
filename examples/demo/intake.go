package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// runIntake is the intake demo: a producer written for the delayed-message
// plugin publishes with x-delay 3000 to a plain queue; delaybridge's intake
// takes it in, and it arrives at the topic's exchange 3 s later.
func runIntake(ctx context.Context, daemon, redisURL, amqpURL, prefix string, env []string) error {
	got := make(chan received, 1)
	closeMQ, err := consumeAMQP(amqpURL, prefix, got)
	if err != nil {
		return err
	}
	defer closeMQ()
	conn, err := amqp.Dial(amqpURL)
	if err != nil {
		return fmt.Errorf("rabbitmq: %w", err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return err
	}
	queue := prefix + ".intake"
	if _, err := ch.QueueDeclare(queue, true, false, false, false, nil); err != nil {
		return err
	}
	defer ch.QueueDelete(queue, false, false, false)

	d := exec.Command(daemon, "run")
	d.Env = append(env, "DELAYBRIDGE_TOPIC_REMINDERS_FORMAT=envelope",
		"DELAYBRIDGE_TOPIC_REMINDERS_EXCHANGE="+prefix, "DELAYBRIDGE_TOPIC_REMINDERS_ROUTING_KEY=reminders",
		"DELAYBRIDGE_TOPIC_REMINDERS_INTAKE=amqp", "DELAYBRIDGE_TOPIC_REMINDERS_INTAKE_QUEUE="+queue)
	d.Stderr = os.Stderr
	if err := d.Start(); err != nil {
		return fmt.Errorf("start delaybridge: %w", err)
	}
	defer func() { d.Process.Signal(syscall.SIGTERM); d.Wait() }()

	body := `{"reminder":"pay invoice 7"}`
	sent := time.Now()
	fmt.Printf("%s  publishing %s to queue %s with header x-delay: 3000 (as for the delayed-message plugin)\n", sent.Format("15:04:05.000"), body, queue)
	err = ch.PublishWithContext(ctx, "", queue, false, false, amqp.Publishing{
		MessageId: "invoice-7", ContentType: "application/json", Headers: amqp.Table{"x-delay": int32(3000)}, Body: []byte(body),
	})
	if err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	select {
	case r := <-got:
		fmt.Printf("%s  received %s from exchange %s, %.3f s after it was published\n", r.at.Format("15:04:05.000"), r.body, prefix, r.at.Sub(sent).Seconds())
		return nil
	case <-time.After(20 * time.Second):
		return fmt.Errorf("the message did not arrive within 20 s")
	case <-ctx.Done():
		return ctx.Err()
	}
}
