package cli

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/url"

	"github.com/delaybridge/delaybridge/config"
	"github.com/delaybridge/delaybridge/forwarder"
	"github.com/delaybridge/delaybridge/redisclient"
	"github.com/delaybridge/delaybridge/sinks"
	"github.com/delaybridge/delaybridge/sinks/amqp"
	"github.com/delaybridge/delaybridge/sinks/kafka"
	redissink "github.com/delaybridge/delaybridge/sinks/redis"
)

// buildSinks creates one sink per topic; the returned func closes them all.
func buildSinks(cfg config.Config, log *slog.Logger) ([]forwarder.Topic, func(), error) {
	var made []sinks.Sink
	closeAll := func() {
		for _, s := range made {
			if err := s.Close(); err != nil {
				log.Warn("close sink", "err", err)
			}
		}
	}
	topics := make([]forwarder.Topic, 0, len(cfg.Topics))
	for _, t := range cfg.Topics {
		s, err := newSink(cfg, t, log)
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("sink of topic %s: %w", t.Name, err)
		}
		made = append(made, s)
		topics = append(topics, forwarder.Topic{Topic: t.Queue(cfg.KeyPrefix), Sink: s})
	}
	return topics, closeAll, nil
}

func newSink(cfg config.Config, t config.Topic, log *slog.Logger) (sinks.Sink, error) {
	log = log.With("topic", t.Name)
	switch t.Sink {
	case "amqp":
		tlsCfg, err := amqpTLS(cfg)
		if err != nil {
			return nil, err
		}
		return amqp.New(amqp.Config{
			URL:            cfg.AMQP.URL,
			TLS:            tlsCfg,
			Exchange:       t.Exchange,
			RoutingKey:     t.RoutingKey,
			MaxMessageSize: cfg.AMQP.MaxMessageSize,
			Name:           "delaybridge " + cfg.ReplicaID + " " + t.Name,
			HoldQueue:      t.HoldQueue,
		}, log)
	case "kafka":
		tlsCfg, err := cfg.Kafka.TLS.Config("")
		if err != nil {
			return nil, err
		}
		return kafka.New(kafka.Config{
			Brokers:       cfg.Kafka.Brokers,
			Topic:         t.KafkaTopic,
			KeyMode:       t.KafkaKey,
			ClientID:      cfg.Kafka.ClientID,
			Compression:   cfg.Kafka.Compression,
			TLS:           tlsCfg,
			SASLMechanism: cfg.Kafka.SASLMechanism,
			SASLUsername:  cfg.Kafka.SASLUsername,
			SASLPassword:  cfg.Kafka.SASLPassword,
		}, log)
	case "redis":
		// A client of the sink's own, even on the daemon's Redis: a
		// stream's slow appends must not take the queue's connections.
		opts, err := redisclient.Options(cfg.RedisSink.Redis)
		if err != nil {
			return nil, err
		}
		return redissink.Open(opts, redissink.Config{
			Stream:         t.Stream,
			MaxLen:         t.StreamMaxLen,
			MaxMessageSize: cfg.RedisSink.MaxMessageSize,
		}, log)
	default:
		return nil, errors.New("unknown sink " + t.Sink)
	}
}

// amqpTLS is the TLS configuration of the AMQP connections (the sinks' and
// the intakes'), verifying the host DELAYBRIDGE_AMQP_URL names.
func amqpTLS(cfg config.Config) (*tls.Config, error) {
	host := ""
	if u, err := url.Parse(cfg.AMQP.URL); err == nil {
		host = u.Hostname()
	}
	return cfg.AMQP.TLS.Config(host)
}
