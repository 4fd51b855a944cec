package config

import (
	"fmt"
	"reflect"
	"strconv"

	"github.com/delaybridge/delaybridge/queue"
)

// intake parses a topic's INTAKE_* variables. Only an intake's own
// variables are read, so a topic without one keeps every field zero.
func (p *parser) intake(t *Topic, te *topicEnv, pre string) {
	src := p.oneOf(pre+"INTAKE", te.Intake, "none", "amqp", "kafka")
	if src == "none" || src == "" {
		return
	}
	t.Intake = src
	t.IntakeOwnRoutingKey = te.RoutingKey != ""
	t.IntakePrefetch = p.intIn(pre+"INTAKE_PREFETCH", te.IntakePrefetch, 1, 65535)
	if t.Format != queue.FormatEnvelope {
		p.fail(pre+"INTAKE", te.Intake, "an intake schedules envelopes (id, headers, routing key, properties): "+Prefix+"_"+pre+"FORMAT must be envelope")
	}
	switch src {
	case "amqp":
		t.IntakeQueue = te.IntakeQueue
		if t.IntakeQueue == "" {
			p.fail(pre+"INTAKE_QUEUE", "", "is required with "+Prefix+"_"+pre+"INTAKE=amqp: the RabbitMQ queue to consume")
		}
	case "kafka":
		t.IntakeKeyFromRecord = p.bool(pre+"INTAKE_KEY_FROM_RECORD", te.IntakeKeyFromRecord)
		t.IntakeKafkaTopic = te.IntakeKafkaTopic
		if t.IntakeKafkaTopic == "" {
			p.fail(pre+"INTAKE_KAFKA_TOPIC", "", "is required with "+Prefix+"_"+pre+"INTAKE=kafka: the Kafka topic to consume")
		}
	}
}

// intakesUsed requires the connection settings of every intake's broker.
func (p *parser) intakesUsed(c Config, e *env) {
	for _, t := range c.Topics {
		switch {
		case t.Intake == "amqp" && c.AMQP.URL == "":
			p.fail("AMQP_URL", e.AMQPURL, fmt.Sprintf("is required: topic %q takes in from RabbitMQ", t.Name))
			return
		case t.Intake == "kafka" && len(c.Kafka.Brokers) == 0:
			p.fail("KAFKA_BROKERS", e.KafkaBrokers, fmt.Sprintf("is required: topic %q takes in from Kafka", t.Name))
			return
		}
	}
}

// intakeValues are the topic's intake settings as Redacted shows them. A
// topic without an intake reads none of its INTAKE_* settings; its prefetch
// shows the default (the start-up log said "0" where the default is 256).
func (t Topic) intakeValues(pre string) map[string]string {
	src := t.Intake
	prefetch := strconv.Itoa(t.IntakePrefetch)
	if src == "" {
		src = "none"
		f, _ := reflect.TypeFor[topicEnv]().FieldByName("IntakePrefetch")
		prefetch = f.Tag.Get("default")
	}
	return map[string]string{
		pre + "INTAKE":                 src,
		pre + "INTAKE_QUEUE":           t.IntakeQueue,
		pre + "INTAKE_PREFETCH":        prefetch,
		pre + "INTAKE_KAFKA_TOPIC":     t.IntakeKafkaTopic,
		pre + "INTAKE_KEY_FROM_RECORD": strconv.FormatBool(t.IntakeKeyFromRecord),
	}
}
