package config

import (
	"os"
	"reflect"

	"github.com/kelseyhightower/envconfig"
)

// env is every global variable as text, with its default. docs/configuration.md's
// table is checked against these tags (see TestConfigDocTableMatchesConfig), so
// the two cannot drift. A field tagged secret is redacted in errors and has a
// _FILE variant (for Kubernetes secrets) that names a file holding the value.
type env struct {
	RedisURL              string `envconfig:"REDIS_URL" default:"redis://127.0.0.1:6379/0" secret:"true" desc:"Redis URL (redis:// or rediss://); user and password may be in it"`
	RedisAddrs            string `envconfig:"REDIS_ADDRS" desc:"comma list of host:port of Redis Cluster nodes (with REDIS_CLUSTER=true) or sentinels (with REDIS_SENTINEL_MASTER); REDIS_URL then only gives database, credentials and TLS"`
	RedisCluster          string `envconfig:"REDIS_CLUSTER" default:"false" desc:"true: REDIS_ADDRS are Redis Cluster nodes"`
	RedisSentinelMaster   string `envconfig:"REDIS_SENTINEL_MASTER" desc:"Sentinel master name: REDIS_ADDRS are sentinels"`
	RedisSentinelUsername string `envconfig:"REDIS_SENTINEL_USERNAME" desc:"ACL user of the sentinels (only with REDIS_SENTINEL_MASTER); the Redis nodes use REDIS_USERNAME or the URL's"`
	RedisSentinelPassword string `envconfig:"REDIS_SENTINEL_PASSWORD" secret:"true" desc:"password of the sentinels, their requirepass or ACL user's (only with REDIS_SENTINEL_MASTER); the Redis nodes use REDIS_PASSWORD or the URL's"`
	RedisUsername         string `envconfig:"REDIS_USERNAME" desc:"Redis ACL user (overrides the URL's)"`
	RedisPassword         string `envconfig:"REDIS_PASSWORD" secret:"true" desc:"Redis password (overrides the URL's)"`
	RedisCAFile           string `envconfig:"REDIS_CA_FILE" desc:"PEM CA bundle to verify Redis's TLS certificate (implies TLS)"`
	RedisCertFile         string `envconfig:"REDIS_CERT_FILE" desc:"PEM client certificate for Redis TLS (implies TLS; needs REDIS_KEY_FILE)"`
	RedisKeyFile          string `envconfig:"REDIS_KEY_FILE" desc:"PEM client key for Redis TLS"`
	RedisTLSInsecure      string `envconfig:"REDIS_TLS_INSECURE" default:"false" desc:"true: skip verifying Redis's certificate (tests only)"`
	RedisWaitReplicas     string `envconfig:"REDIS_WAIT_REPLICAS" default:"0" desc:"acknowledge a schedule (intake, HTTP API, CLI) only once this many replicas have it (WAIT, once per batch); while fewer are connected, acceptance stops. 0: acknowledge what the master has (a failover may lose it). See docs/operations.md"`
	RedisWaitTimeout      string `envconfig:"REDIS_WAIT_TIMEOUT" default:"500ms" desc:"longest wait for REDIS_WAIT_REPLICAS (and REDIS_WAIT_AOF), 1ms to 2s; past it the producer is told the write is not confirmed (HTTP 503), the intake hands the message back"`
	RedisWaitAOF          string `envconfig:"REDIS_WAIT_AOF" default:"false" desc:"true: also wait for the master's fsync of its append-only file (WAITAOF, Redis or Valkey 7.2 or later, with appendonly yes: refused at start, exit 2, on a server without WAITAOF or with appendonly no; appendonly turned off later makes /readyz 503)"`

	AMQPURL            string `envconfig:"AMQP_URL" default:"amqp://guest:guest@127.0.0.1:5672/" secret:"true" desc:"RabbitMQ URL (amqp:// or amqps://); may be empty when no topic uses amqp"`
	AMQPCAFile         string `envconfig:"AMQP_CA_FILE" desc:"PEM CA bundle to verify RabbitMQ's TLS certificate (needs an amqps:// URL)"`
	AMQPCertFile       string `envconfig:"AMQP_CERT_FILE" desc:"PEM client certificate for RabbitMQ TLS (needs an amqps:// URL and AMQP_KEY_FILE)"`
	AMQPKeyFile        string `envconfig:"AMQP_KEY_FILE" desc:"PEM client key for RabbitMQ TLS"`
	AMQPMaxMessageSize string `envconfig:"AMQP_MAX_MESSAGE_SIZE" default:"134217728" desc:"largest body published, bytes (RabbitMQ's max_message_size); larger ones are dead-lettered"`

	KafkaBrokers        string `envconfig:"KAFKA_BROKERS" default:"127.0.0.1:9092" desc:"comma list of Kafka bootstrap brokers (required when a topic uses kafka)"`
	KafkaClientID       string `envconfig:"KAFKA_CLIENT_ID" default:"delaybridge" desc:"Kafka client id"`
	KafkaCompression    string `envconfig:"KAFKA_COMPRESSION" default:"none" desc:"none, gzip, snappy, lz4 or zstd"`
	KafkaTLS            string `envconfig:"KAFKA_TLS" default:"false" desc:"true: connect to Kafka with TLS"`
	KafkaCAFile         string `envconfig:"KAFKA_CA_FILE" desc:"PEM CA bundle to verify Kafka's certificate (implies TLS)"`
	KafkaCertFile       string `envconfig:"KAFKA_CERT_FILE" desc:"PEM client certificate for Kafka TLS (implies TLS; needs KAFKA_KEY_FILE)"`
	KafkaKeyFile        string `envconfig:"KAFKA_KEY_FILE" desc:"PEM client key for Kafka TLS"`
	KafkaSASLMechanism  string `envconfig:"KAFKA_SASL_MECHANISM" desc:"empty, plain, scram-sha-256 or scram-sha-512"`
	KafkaSASLUsername   string `envconfig:"KAFKA_SASL_USERNAME" desc:"Kafka SASL user"`
	KafkaSASLPassword   string `envconfig:"KAFKA_SASL_PASSWORD" secret:"true" desc:"Kafka SASL password"`
	KafkaSessionTimeout string `envconfig:"KAFKA_SESSION_TIMEOUT" default:"10s" desc:"Kafka intake: the consumer group's session timeout (1s-5m; the broker allows 6s-30m by default): how long the partitions of a replica that died without leaving stay unread; heartbeats every third of it, at most 3s"`

	SinkRedisURL              string `envconfig:"SINK_REDIS_URL" secret:"true" desc:"Redis URL (redis:// or rediss://) of the streams that topics with SINK=redis append to; with SINK_REDIS_ADDRS it only gives database, credentials and TLS. Empty, without SINK_REDIS_ADDRS: the daemon's Redis, with the same client settings, and no other SINK_REDIS_ connection variable may be set"`
	SinkRedisAddrs            string `envconfig:"SINK_REDIS_ADDRS" desc:"the streams' Redis: comma list of host:port of Redis Cluster nodes (with SINK_REDIS_CLUSTER=true) or sentinels (with SINK_REDIS_SENTINEL_MASTER)"`
	SinkRedisCluster          string `envconfig:"SINK_REDIS_CLUSTER" default:"false" desc:"true: SINK_REDIS_ADDRS are Redis Cluster nodes"`
	SinkRedisSentinelMaster   string `envconfig:"SINK_REDIS_SENTINEL_MASTER" desc:"Sentinel master name of the streams' Redis: SINK_REDIS_ADDRS are sentinels"`
	SinkRedisSentinelUsername string `envconfig:"SINK_REDIS_SENTINEL_USERNAME" desc:"ACL user of the streams' sentinels (only with SINK_REDIS_SENTINEL_MASTER)"`
	SinkRedisSentinelPassword string `envconfig:"SINK_REDIS_SENTINEL_PASSWORD" secret:"true" desc:"password of the streams' sentinels (only with SINK_REDIS_SENTINEL_MASTER); the Redis nodes use SINK_REDIS_PASSWORD or the URL's"`
	SinkRedisUsername         string `envconfig:"SINK_REDIS_USERNAME" desc:"ACL user of the streams' Redis (overrides SINK_REDIS_URL's)"`
	SinkRedisPassword         string `envconfig:"SINK_REDIS_PASSWORD" secret:"true" desc:"password of the streams' Redis (overrides SINK_REDIS_URL's)"`
	SinkRedisCAFile           string `envconfig:"SINK_REDIS_CA_FILE" desc:"PEM CA bundle to verify the streams' Redis's TLS certificate (implies TLS)"`
	SinkRedisCertFile         string `envconfig:"SINK_REDIS_CERT_FILE" desc:"PEM client certificate for the streams' Redis TLS (implies TLS; needs SINK_REDIS_KEY_FILE)"`
	SinkRedisKeyFile          string `envconfig:"SINK_REDIS_KEY_FILE" desc:"PEM client key for the streams' Redis TLS"`
	SinkRedisTLSInsecure      string `envconfig:"SINK_REDIS_TLS_INSECURE" default:"false" desc:"true: skip verifying the streams' Redis's certificate (tests only)"`
	SinkRedisMaxMessageSize   string `envconfig:"SINK_REDIS_MAX_MESSAGE_SIZE" default:"134217728" desc:"largest body appended to a Redis stream, bytes (at most 536870912, Redis's proto-max-bulk-len); larger ones are dead-lettered"`

	MaxMessageSize string `envconfig:"MAX_MESSAGE_SIZE" default:"1048576" desc:"largest message body accepted, bytes (at most 536870912), checked when a message is taken in: the HTTP API answers 413, the CLI exits 1, an intake dead-letters it, the Go API returns queue.ErrTooLarge. The default, 1 MiB, is what every sink accepts by default (Kafka's message.max.bytes). A topic's own MAX_MESSAGE_SIZE overrides it"`

	KeyPrefix string `envconfig:"KEY_PREFIX" default:"dq" desc:"prefix of every Redis key"`
	Topics    string `envconfig:"TOPICS" desc:"comma list of topic names (required); a name is 1 to 100 bytes of ASCII letters, digits, -, _ and ."`

	BatchSize          string `envconfig:"BATCH_SIZE" default:"500" desc:"most messages claimed and published per round trip (1-5000)"`
	MaxInflightBatches string `envconfig:"MAX_INFLIGHT_BATCHES" default:"2" desc:"claimed batches per slot not yet confirmed (1-64; a backlogged slot of a fair topic keeps one, smaller): a slow broker slows claiming"`
	Lease              string `envconfig:"LEASE" default:"30s" desc:"how long a claim is held before another replica may take it back"`
	MaxAttempts        string `envconfig:"MAX_ATTEMPTS" default:"10" desc:"failed publishes before a message goes to the dead set"`
	RetryBackoff       string `envconfig:"RETRY_BACKOFF" default:"1s" desc:"wait before the first retry; doubles each attempt"`
	RetryBackoffMax    string `envconfig:"RETRY_BACKOFF_MAX" default:"5m" desc:"longest wait between retries"`
	PollInterval       string `envconfig:"POLL_INTERVAL" default:"1s" desc:"longest sleep of an idle slot before it looks again, without keyspace notifications"`
	KeyspaceEvents     string `envconfig:"KEYSPACE_EVENTS" default:"auto" desc:"auto: wake idle slots with Redis keyspace notifications when notify-keyspace-events has K and z (or K and A); off: poll every POLL_INTERVAL"`
	KeyspacePoll       string `envconfig:"KEYSPACE_POLL_INTERVAL" default:"1m" desc:"longest sleep of an idle slot while keyspace notifications are used (a safety net)"`
	ShutdownTimeout    string `envconfig:"SHUTDOWN_TIMEOUT" default:"20s" desc:"on SIGTERM, how long in-flight batches may take before they are returned"`

	HTTPAddr     string `envconfig:"HTTP_ADDR" default:":8080" desc:"listen address of /metrics, /healthz and /readyz (port 0: any free port)"`
	HTTPMaxConns string `envconfig:"HTTP_MAX_CONNS" default:"1024" desc:"most connections the HTTP_ADDR listener holds open at once (1 to 1000000); more wait in the kernel's backlog until one closes"`
	LogLevel     string `envconfig:"LOG_LEVEL" default:"info" desc:"debug, info, warn or error"`
	LogFormat    string `envconfig:"LOG_FORMAT" default:"json" desc:"json or text"`

	ReplicaID         string `envconfig:"REPLICA_ID" desc:"this replica's id (default: host name and process id)"`
	Ownership         string `envconfig:"OWNERSHIP" default:"rendezvous" desc:"rendezvous: live replicas share the slots; all: every replica scans every slot"`
	HeartbeatInterval string `envconfig:"HEARTBEAT_INTERVAL" default:"1s" desc:"how often a replica renews its heartbeat"`
	HeartbeatTTL      string `envconfig:"HEARTBEAT_TTL" default:"5s" desc:"how long a replica counts as live after its last heartbeat; keep it well above the slowest Redis call (a member of several MiB takes Redis a second or more to copy in a script), or a replica held up that long counts as gone and its slots move"`

	// The web console (delaybridge console).
	ConsoleAddr              string `envconfig:"CONSOLE_ADDR" default:"127.0.0.1:8081" desc:"listen address of the web console (delaybridge console)"`
	ConsoleToken             string `envconfig:"CONSOLE_TOKEN" secret:"true" desc:"token that unlocks the console's actions (pause, limit, requeue, purge, cancel, reschedule); empty: the console is read-only"`
	ConsoleSecureCookie      string `envconfig:"CONSOLE_SECURE_COOKIE" default:"false" desc:"true: the console's session cookie is Secure even over plain HTTP (behind a TLS-terminating proxy)"`
	ConsoleHosts             string `envconfig:"CONSOLE_HOSTS" desc:"comma list of the Host names the console answers to, name:port or name (any port); others get 421, which stops DNS rebinding. Empty: localhost, 127.0.0.1, [::1] and the CONSOLE_ADDR host, with its port"`
	ConsoleReadRequiresToken string `envconfig:"CONSOLE_READ_REQUIRES_TOKEN" default:"false" desc:"true: topic and message pages (message bodies) need the console token too; the overview stays open. Without a token set, bodies are then shown to no one"`
	ConsoleMaxConns          string `envconfig:"CONSOLE_MAX_CONNS" default:"1024" desc:"most connections the console holds open at once (1 to 1000000); more wait in the kernel's backlog until one closes"`
	ConsoleSessionTTL        string `envconfig:"CONSOLE_SESSION_TTL" default:"12h" desc:"how long a console login lasts (1m to 720h); logging out ends it at once, a console restart ends them all"`

	// The HTTP API for producers (api package).
	APIAddr             string `envconfig:"API_ADDR" desc:"listen address of the HTTP API (schedule, get, reschedule, cancel by id); empty: delaybridge run serves none, delaybridge api listens on :8090"`
	APITokens           string `envconfig:"API_TOKENS" secret:"true" desc:"comma list of the HTTP API's bearer tokens (16 characters or more), each optionally limited to topics: token:orders+reminders; required when the API is served, unless API_INSECURE=true"`
	APIInsecure         string `envconfig:"API_INSECURE" default:"false" desc:"true: serve the HTTP API without tokens (anyone who reaches it may schedule and cancel)"`
	APITLSCertFile      string `envconfig:"API_TLS_CERT_FILE" desc:"PEM certificate: the HTTP API serves HTTPS (needs API_TLS_KEY_FILE)"`
	APITLSKeyFile       string `envconfig:"API_TLS_KEY_FILE" desc:"PEM key of API_TLS_CERT_FILE"`
	APIMaxRequestSize   string `envconfig:"API_MAX_REQUEST_SIZE" default:"16777216" desc:"largest HTTP API request body, bytes (a batch included); larger ones are refused with 413"`
	APIMaxRequestMemory string `envconfig:"API_MAX_REQUEST_MEMORY" default:"67108864" desc:"bytes the bodies of the HTTP API requests being served (and the messages of GETs being written) may hold together (1048576 to 1099511627776); a request that does not fit within 2 s is answered 503 with Retry-After"`
	APIMaxConns         string `envconfig:"API_MAX_CONNS" default:"1024" desc:"most connections the HTTP API holds open at once (1 to 1000000); more wait in the kernel's backlog until one closes"`
}

// topicEnv is one topic's variables, DELAYBRIDGE_TOPIC_<NAME>_*.
type topicEnv struct {
	Sink       string `envconfig:"SINK" default:"amqp" desc:"amqp, kafka or redis (a Redis stream)"`
	Slots      string `envconfig:"SLOTS" default:"1" desc:"number of slots, a power of two from 1 to 1024"`
	Key        string `envconfig:"KEY" desc:"adopt this existing ZSET as the topic's only slot"`
	Format     string `envconfig:"FORMAT" default:"raw" desc:"raw (member = body) or envelope (JSON with id, body, headers, routing key)"`
	Exchange   string `envconfig:"EXCHANGE" desc:"AMQP exchange (empty: the default exchange)"`
	RoutingKey string `envconfig:"ROUTING_KEY" desc:"AMQP routing key (default: the topic name; with an intake, each message's own)"`
	// RoutingKeys is read by routingKeys (routingkeys.go) for every topic,
	// listed or not; the field names it for the documentation.
	RoutingKeys string `envconfig:"ROUTING_KEYS" desc:"comma list of AMQP topic patterns (orders.*,orders.#,audit: * one dot-separated word, # zero or more) a routing_key sent to the HTTP API must match; # alone: every key. Unset: an amqp topic refuses every per-message routing key with 403, a kafka or redis topic takes any (it cannot leave the topic's Kafka topic or stream). The CLI, the Go API and intakes are not limited"`
	KafkaTopic  string `envconfig:"KAFKA_TOPIC" desc:"Kafka topic (default: the topic name)"`
	KafkaKey    string `envconfig:"KAFKA_KEY" default:"envelope" desc:"Kafka record key: envelope (each message's own key, byte for byte: an intake record's key or an envelope's routing key; none without one), id (the message id, always), or none (no key, even for a message that has its own)"`

	Stream       string `envconfig:"STREAM" desc:"Redis stream key the messages are appended to (required with SINK=redis)"`
	StreamMaxLen string `envconfig:"STREAM_MAXLEN" default:"0" desc:"trim the stream to about this many entries on each append (XADD MAXLEN ~); trimming drops the oldest entries even if no consumer read them. 0: never trim"`

	Intake              string `envconfig:"INTAKE" default:"none" desc:"none, amqp (consume INTAKE_QUEUE, due time from x-delay or x-delaybridge-due headers) or kafka (consume INTAKE_KAFKA_TOPIC); needs FORMAT=envelope. See docs/migration.md"`
	IntakeQueue         string `envconfig:"INTAKE_QUEUE" desc:"RabbitMQ queue the amqp intake consumes (required with INTAKE=amqp; it must exist)"`
	IntakePrefetch      string `envconfig:"INTAKE_PREFETCH" default:"256" desc:"unacknowledged deliveries (amqp) or records (kafka) the intake holds at once, 1 to 65535; also its largest Redis batch"`
	IntakeKeyFromRecord string `envconfig:"INTAKE_KEY_FROM_RECORD" default:"false" desc:"kafka intake: a record's key is also the message's fair-share key (see FAIR; an x-delaybridge-key header wins). The amqp intake reads the key from the x-delaybridge-key header"`
	IntakeKafkaTopic    string `envconfig:"INTAKE_KAFKA_TOPIC" desc:"Kafka topic the kafka intake consumes in the consumer group delaybridge-<topic> (required with INTAKE=kafka)"`

	RateLimit string `envconfig:"RATE_LIMIT" desc:"most deliveries per second of this topic summed over every replica, a positive decimal (300, 0.5); held messages wait in the scheduled set. Unset: unlimited. delaybridge limit overrides it at run time"`
	HoldQueue string `envconfig:"HOLD_QUEUE" desc:"RabbitMQ queue (usually the consumers') whose ready messages HOLD_ABOVE counts, read with a passive declare; it must exist (SINK=amqp only)"`
	HoldAbove string `envconfig:"HOLD_ABOVE" desc:"hold the topic while HOLD_QUEUE holds more ready messages than this (it may exceed it by one batch per slot); required with HOLD_QUEUE. delaybridge limit overrides it at run time"`

	// MaxMessageSize is read by messageSize (msgsize.go) for every topic,
	// listed or not; the field names it for the documentation.
	MaxMessageSize string `envconfig:"MAX_MESSAGE_SIZE" desc:"largest message body this topic accepts, bytes (at most 536870912); unset: the global MAX_MESSAGE_SIZE. Read for registered topics not listed in TOPICS too (the HTTP API and the CLI serve them)"`

	DedupWindow string `envconfig:"DEDUP_WINDOW" default:"0" desc:"how long a delivered message's id stays known (a duration, at most 720h; needs FORMAT=envelope): scheduling that id again meanwhile is accepted as a duplicate and not delivered again. Costs about 50-150 bytes of Redis per id delivered in the window (docs/operations.md). 0: remember nothing"`

	Fair string `envconfig:"FAIR" default:"false" desc:"fair share (needs FORMAT=envelope): among due messages each key (an envelope's key) gets its turn, round-robin, in due order within a key; messages without a key share one. Costs a second copy of each scheduled member in Redis (docs/flow-control.md)"`
	// KeyRateLimit is read by fair (dedup.go) with FAIR.
	KeyRateLimit string `envconfig:"KEY_RATE_LIMIT" desc:"fair topics: most deliveries per second of each key summed over every replica, a positive decimal (20, 0.5); a key over it waits alone, the others go on. Unset: unlimited. delaybridge limit TOPIC --key K overrides it per key at run time"`
}

// lookup reads the text of every variable through envconfig; it only fails on
// malformed struct tags, since every field is a string.
//
// envconfig falls back to the bare tag name when the prefixed variable is
// unset (DELAYBRIDGE_LOG_LEVEL unset: it reads LOG_LEVEL; for a topic, KEY,
// SLOTS or SINK). Those are common names in other programs' environments, so
// lookup puts back the default of every field whose own prefixed variable is
// unset: only DELAYBRIDGE_* variables configure delaybridge.
func lookup(prefix string, spec any) error {
	if err := envconfig.Process(prefix, spec); err != nil {
		return err
	}
	v := reflect.ValueOf(spec).Elem()
	for i := 0; i < v.NumField(); i++ {
		f := v.Type().Field(i)
		if _, ok := os.LookupEnv(prefix + "_" + f.Tag.Get("envconfig")); !ok {
			v.Field(i).SetString(f.Tag.Get("default"))
		}
	}
	return nil
}
