package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/delaybridge/delaybridge/config"
	"github.com/delaybridge/delaybridge/intake"
	"github.com/delaybridge/delaybridge/queue"
)

// intakeRunner is one topic's intake: it runs until its context ends.
type intakeRunner interface {
	Run(ctx context.Context) error
}

// buildIntakes creates the intake of every topic that has one.
func buildIntakes(cfg config.Config, q *queue.Queue, reg prometheus.Registerer, log *slog.Logger) ([]intakeRunner, error) {
	var out []intakeRunner
	var metrics *intake.Metrics
	for _, t := range cfg.Topics {
		if t.Intake == "" {
			continue
		}
		if metrics == nil {
			metrics = intake.NewMetrics(reg)
		}
		target := intake.Target{Topic: t.Queue(cfg.KeyPrefix), MaxBody: maxBody(cfg, t), OwnRoutingKey: t.IntakeOwnRoutingKey}
		r, err := newIntake(cfg, t, target, q, metrics, log)
		if err != nil {
			return nil, fmt.Errorf("intake of topic %s: %w", t.Name, err)
		}
		out = append(out, r)
	}
	return out, nil
}

func newIntake(cfg config.Config, t config.Topic, target intake.Target, q *queue.Queue, m *intake.Metrics, log *slog.Logger) (intakeRunner, error) {
	switch t.Intake {
	case "amqp":
		host := ""
		if u, err := url.Parse(cfg.AMQP.URL); err == nil {
			host = u.Hostname()
		}
		tlsCfg, err := cfg.AMQP.TLS.Config(host)
		if err != nil {
			return nil, err
		}
		return intake.NewAMQP(intake.AMQPConfig{
			URL: cfg.AMQP.URL, TLS: tlsCfg, Queue: t.IntakeQueue, Prefetch: t.IntakePrefetch,
			Name: "delaybridge " + cfg.ReplicaID + " intake " + t.Name,
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
