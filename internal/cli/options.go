package cli

import (
	"log/slog"

	"github.com/delaybridge/delaybridge/config"
	"github.com/delaybridge/delaybridge/forwarder"
	"github.com/delaybridge/delaybridge/queue"
)

// forwarderOptions is the one place the configuration reaches the
// forwarder: every configured setting of the pipeline, field by field
// (TestForwarderOptionsCarryEveryConfiguredSetting checks none is left out).
func forwarderOptions(cfg config.Config, q *queue.Queue, topics []forwarder.Topic, metrics *forwarder.Metrics, log *slog.Logger) forwarder.Options {
	return forwarder.Options{
		Queue:                q,
		Topics:               topics,
		KeyPrefix:            cfg.KeyPrefix,
		RedisHint:            redisHint(cfg),
		BatchSize:            cfg.BatchSize,
		MaxInflightBatches:   cfg.MaxInflightBatches,
		Lease:                cfg.Lease,
		MaxAttempts:          cfg.MaxAttempts,
		RetryBackoff:         cfg.RetryBackoff,
		RetryBackoffMax:      cfg.RetryBackoffMax,
		PollInterval:         cfg.PollInterval,
		KeyspaceEvents:       cfg.KeyspaceEvents,
		KeyspacePollInterval: cfg.KeyspacePollInterval,
		ShutdownTimeout:      cfg.ShutdownTimeout,
		ReplicaID:            cfg.ReplicaID,
		AllSlots:             cfg.Ownership == "all",
		HeartbeatInterval:    cfg.HeartbeatInterval,
		HeartbeatTTL:         cfg.HeartbeatTTL,
		Flow:                 flowOf(cfg),
		Metrics:              metrics,
		Log:                  log,
	}
}
