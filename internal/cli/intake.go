package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/delaybridge/delaybridge/config"
	"github.com/delaybridge/delaybridge/intake"
	"github.com/delaybridge/delaybridge/queue"
	"github.com/delaybridge/delaybridge/sinks/kafka"
)

// intakeRunner is one topic's intake: it runs until its context ends;
// Health is nil while it consumes, else why not (for /readyz).
type intakeRunner interface {
	Run(ctx context.Context) error
	Health() error
}

// topicIntake is a topic's intake whose Health names the topic.
type topicIntake struct {
	intakeRunner
	topic string
}

func (t topicIntake) Health() error {
	err := t.intakeRunner.Health()
	switch {
	case err == nil:
		return nil
	case errors.Is(err, intake.ErrSessionTimeoutRefused):
		return fmt.Errorf("topic %s: %w (set DELAYBRIDGE_KAFKA_SESSION_TIMEOUT)", t.topic, err)
	}
	return fmt.Errorf("topic %s: %w", t.topic, err)
}

// intakesHealth is the first unhealthy intake's reason, or nil.
func intakesHealth(intakes []intakeRunner) error {
	for _, in := range intakes {
		if err := in.Health(); err != nil {
			return err
		}
	}
	return nil
}

// buildIntakes creates the intake of every topic that has one.
func buildIntakes(cfg config.Config, q *queue.Queue, reg prometheus.Registerer, log *slog.Logger, tracer trace.Tracer) ([]intakeRunner, error) {
	var out []intakeRunner
	var metrics *intake.Metrics
	for _, t := range cfg.Topics {
		if t.Intake == "" {
			continue
		}
		if metrics == nil {
			metrics = intake.NewMetrics(reg)
		}
		target := intake.Target{Topic: t.Queue(cfg.KeyPrefix), MaxBody: maxBody(cfg, t), OwnRoutingKey: t.IntakeOwnRoutingKey,
			KeyFromRecord: t.IntakeKeyFromRecord, Tracer: tracer}
		r, err := newIntake(cfg, t, target, q, metrics, log)
		if err != nil {
			return nil, fmt.Errorf("intake of topic %s: %w", t.Name, err)
		}
		out = append(out, topicIntake{intakeRunner: r, topic: t.Name})
	}
	return out, nil
}

func newIntake(cfg config.Config, t config.Topic, target intake.Target, q *queue.Queue, m *intake.Metrics, log *slog.Logger) (intakeRunner, error) {
	switch t.Intake {
	case "amqp":
		tlsCfg, err := amqpTLS(cfg)
		if err != nil {
			return nil, err
		}
		return intake.NewAMQP(intake.AMQPConfig{
			URL: cfg.AMQP.URL, TLS: tlsCfg, Queue: t.IntakeQueue, Prefetch: t.IntakePrefetch,
			Name: "delaybridge " + cfg.ReplicaID + " intake " + t.Name,
		}, target, q, m, log)
	case "kafka":
		tlsCfg, err := cfg.Kafka.TLS.Config("")
		if err != nil {
			return nil, err
		}
		dialer, err := kafka.Config{
			ClientID: cfg.Kafka.ClientID, TLS: tlsCfg, SASLMechanism: cfg.Kafka.SASLMechanism,
			SASLUsername: cfg.Kafka.SASLUsername, SASLPassword: cfg.Kafka.SASLPassword,
		}.Dialer()
		if err != nil {
			return nil, err
		}
		return intake.NewKafka(intake.KafkaConfig{
			Brokers: cfg.Kafka.Brokers, Topic: t.IntakeKafkaTopic, Dialer: dialer, Prefetch: t.IntakePrefetch,
			SessionTimeout: cfg.Kafka.SessionTimeout,
		}, target, q, m, log)
	default:
		return nil, fmt.Errorf("intake %q is not supported", t.Intake)
	}
}

// maxBody is the largest body the topic's destination takes (0: the sink
// decides at publish time).
func maxBody(cfg config.Config, t config.Topic) int {
	switch t.Sink {
	case "amqp":
		return int(cfg.AMQP.MaxMessageSize)
	case "redis":
		return cfg.RedisSink.MaxMessageSize
	case "kafka":
		return kafka.DefaultMaxMessageSize // the Kafka sink's, as the daemon builds it
	default:
		return 0
	}
}

// startIntakes runs every intake in a goroutine of its own; the returned
// func stops them and waits until they ended.
func startIntakes(ctx context.Context, intakes []intakeRunner, log *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, in := range intakes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := in.Run(ctx); err != nil {
				log.Error("intake stopped", "err", err)
			}
		}()
	}
	return func() {
		cancel()
		wg.Wait()
	}
}
