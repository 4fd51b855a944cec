// Package config turns DELAYBRIDGE_* environment variables into a validated
// Config. Every variable is read as text through envconfig and then parsed
// here, so one run reports every problem at once, each naming the variable,
// its value (secrets redacted) and what is allowed.
package config

import (
	"time"

	"github.com/delaybridge/delaybridge/queue"
)

// Prefix is the prefix of every variable.
const Prefix = "DELAYBRIDGE"

// Config is the daemon's validated configuration.
type Config struct {
	Redis Redis
	// RedisWait is what an acknowledged schedule waits for.
	RedisWait RedisWait
	AMQP      AMQP
	Kafka     Kafka
	// RedisSink is where topics with Sink "redis" append.
	RedisSink RedisSink

	KeyPrefix string
	Topics    []Topic
	// MessageSize is the largest body each topic accepts (MAX_MESSAGE_SIZE
	// and the topics' own); a listed topic's is in its Topic too.
	MessageSize MessageSize

	BatchSize          int
	MaxInflightBatches int
	Lease              time.Duration
	MaxAttempts        int
	RetryBackoff       time.Duration
	RetryBackoffMax    time.Duration
	PollInterval       time.Duration
	// KeyspaceEvents is auto or off (see forwarder.Options.KeyspaceEvents).
	KeyspaceEvents       string
	KeyspacePollInterval time.Duration
	ShutdownTimeout      time.Duration

	HTTPAddr string
	// HTTPMaxConns bounds the connections the HTTP_ADDR listener holds
	// open.
	HTTPMaxConns int
	LogLevel     string // debug, info, warn, error
	LogFormat    string // json, text

	ReplicaID         string
	Ownership         string // "rendezvous" or "all"
	HeartbeatInterval time.Duration
	HeartbeatTTL      time.Duration

	Console Console
	API     API
}

// Redis is how to reach Redis.
type Redis struct {
	// URL is a redis:// or rediss:// URL (standalone).
	URL string
	// Addrs, when set, selects Cluster (Cluster true) or Sentinel
	// (SentinelMaster set) mode; URL then only supplies the database,
	// credentials, TLS and go-redis's query options.
	Addrs          []string
	Cluster        bool
	SentinelMaster string
	// SentinelUsername and SentinelPassword authenticate to the sentinels
	// only (their requirepass or ACL); Username and Password go to the
	// master they name. Both need SentinelMaster.
	SentinelUsername string
	SentinelPassword string
	Username         string
	Password         string
	TLS              TLS
}

// AMQP is how to reach RabbitMQ.
type AMQP struct {
	URL            string
	TLS            TLS
	MaxMessageSize int64
}

// Kafka is how to reach Kafka.
type Kafka struct {
	Brokers       []string
	ClientID      string
	Compression   string // none, gzip, snappy, lz4, zstd
	TLS           TLS
	SASLMechanism string // "", plain, scram-sha-256, scram-sha-512
	SASLUsername  string
	SASLPassword  string
	// SessionTimeout is the Kafka intake's consumer group session timeout.
	SessionTimeout time.Duration
}

// RedisSink is the Redis of the streams that topics with Sink "redis"
// append to.
type RedisSink struct {
	// Redis is the daemon's Redis, unless SINK_REDIS_URL names another:
	// then a single Redis given by that URL alone.
	Redis          Redis
	MaxMessageSize int
}

// TLS holds file paths of a TLS client setup. Enabled is true when a CA,
// client certificate or the URL scheme asks for TLS.
type TLS struct {
	Enabled            bool
	CAFile             string
	CertFile           string
	KeyFile            string
	InsecureSkipVerify bool
}

// Topic is one topic's settings.
type Topic struct {
	// Name is the topic's name; Var is its upper-cased form in variable names.
	Name string
	Var  string

	Sink       string // "amqp", "kafka" or "redis"
	Slots      int
	Key        string
	Format     queue.Format
	Exchange   string
	RoutingKey string
	KafkaTopic string
	KafkaKey   string // none, id, envelope
	// Stream is the Redis stream key (Sink "redis"); StreamMaxLen > 0
	// trims it to about that many entries.
	Stream       string
	StreamMaxLen int64
	// Intake is "" (none), "amqp" or "kafka": where the topic takes in
	// delayed messages besides its producers (package intake).
	Intake           string
	IntakeQueue      string
	IntakePrefetch   int
	IntakeKafkaTopic string
	// IntakeOwnRoutingKey is true when ROUTING_KEY is set: the intake then
	// drops each message's own routing key, so the topic's applies.
	IntakeOwnRoutingKey bool
	// IntakeKeyFromRecord: the kafka intake takes a record's key as the
	// message's fair-share key.
	IntakeKeyFromRecord bool
	// RateLimit is the most deliveries per second over every replica (0:
	// unlimited). HoldQueue, when set, is a RabbitMQ queue: the topic holds
	// while it has more than HoldAbove ready messages.
	RateLimit float64
	HoldQueue string
	HoldAbove int
	// DedupWindow is how long a delivered id stays known (queue.Topic's
	// DedupWindow); 0 remembers nothing.
	DedupWindow time.Duration
	// MaxMessageSize is the largest body a front door accepts for the topic
	// (queue.Topic's MaxMessageSize): MAX_MESSAGE_SIZE or the topic's own.
	MaxMessageSize int
	// Fair is queue.Topic's Fair: round-robin among the keys of due
	// messages; KeyRateLimit its KeyRateLimit (0: none).
	Fair         bool
	KeyRateLimit float64
}

// Queue is the topic's Redis data model.
func (t Topic) Queue(prefix string) queue.Topic {
	return queue.Topic{Name: t.Name, Prefix: prefix, Slots: t.Slots, Key: t.Key, Format: t.Format, DedupWindow: t.DedupWindow,
		MaxMessageSize: t.MaxMessageSize, Fair: t.Fair, KeyRateLimit: t.KeyRateLimit}
}
