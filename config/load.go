package config

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/delaybridge/delaybridge/queue"
)

// FieldError is one problem with one variable.
type FieldError struct {
	Var     string // full variable name, e.g. DELAYBRIDGE_BATCH_SIZE
	Value   string // as given, secrets redacted
	Problem string // what is wrong and what is allowed
}

func (e *FieldError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("%s: %s", e.Var, e.Problem)
	}
	return fmt.Sprintf("%s=%q: %s", e.Var, e.Value, e.Problem)
}

// Load reads and validates the configuration from the environment. The error
// joins every problem found (errors.Join of *FieldError).
func Load() (Config, error) { return load(false) }

// LoadCLI is Load for the producer and operator commands: DELAYBRIDGE_TOPICS
// may be unset, since those commands read the topics the daemon registered
// in Redis (queue.Topics). Topics that are set are parsed and checked as
// for the daemon.
func LoadCLI() (Config, error) { return load(true) }

func load(cli bool) (Config, error) {
	var e env
	if err := lookup(Prefix, &e); err != nil {
		return Config{}, fmt.Errorf("read environment: %w", err)
	}
	p := &parser{}
	p.readFiles(&e)
	c := p.global(&e)
	if !cli || strings.TrimSpace(e.Topics) != "" {
		c.Topics = p.topics(e.Topics)
	}
	c.MessageSize = p.messageSize(&e, os.Environ())
	for i := range c.Topics {
		c.Topics[i].MaxMessageSize = c.MessageSize.Of(c.Topics[i].Name)
	}
	p.sinksUsed(c, &e)
	p.intakesUsed(c, &e)
	if err := errors.Join(p.errs...); err != nil {
		return Config{}, err
	}
	return c, nil
}

// VarName is the upper-cased form of a topic name used in its variables:
// every character outside A-Z, a-z and 0-9 becomes one '_' (a byte that is
// not UTF-8 counts as a character). Only ASCII letters are upper-cased:
// Unicode upper-casing would fold distinct names such as "ſ" and "s"
// together.
func VarName(topic string) string {
	b := make([]byte, 0, len(topic))
	for _, r := range topic {
		switch {
		case r >= 'a' && r <= 'z':
			b = append(b, byte(r-'a'+'A'))
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			b = append(b, byte(r))
		default:
			b = append(b, '_')
		}
	}
	return string(b)
}

func (p *parser) global(e *env) Config {
	c := Config{
		KeyPrefix: e.KeyPrefix,
		HTTPAddr:  e.HTTPAddr,
		ReplicaID: e.ReplicaID,
	}
	if c.KeyPrefix == "" || strings.ContainsAny(c.KeyPrefix, "{} \t\r\n") {
		p.fail("KEY_PREFIX", e.KeyPrefix, "must be non-empty, without braces or white space")
	}
	c.Redis = p.redis("REDIS_", e.redisVars("REDIS_"))
	c.RedisWait = p.redisWait(e)
	c.AMQP = p.amqp(e)
	c.Kafka = p.kafka(e)
	c.RedisSink = p.redisSink(e, c.Redis)
	c.Console = p.console(e)
	c.API = p.api(e)

	c.BatchSize = p.intIn("BATCH_SIZE", e.BatchSize, 1, 5000)
	c.MaxInflightBatches = p.intIn("MAX_INFLIGHT_BATCHES", e.MaxInflightBatches, 1, 64)
	c.Lease = p.duration("LEASE", e.Lease, time.Second/10, 0)
	c.MaxAttempts = p.intIn("MAX_ATTEMPTS", e.MaxAttempts, 1, 1000000)
	c.RetryBackoff = p.duration("RETRY_BACKOFF", e.RetryBackoff, time.Millisecond, 0)
	c.RetryBackoffMax = p.duration("RETRY_BACKOFF_MAX", e.RetryBackoffMax, time.Millisecond, 0)
	if c.RetryBackoff > 0 && c.RetryBackoffMax > 0 && c.RetryBackoffMax < c.RetryBackoff {
		p.fail("RETRY_BACKOFF_MAX", e.RetryBackoffMax, "must not be shorter than "+Prefix+"_RETRY_BACKOFF")
	}
	c.PollInterval = p.duration("POLL_INTERVAL", e.PollInterval, time.Millisecond, time.Hour)
	c.KeyspaceEvents = p.oneOf("KEYSPACE_EVENTS", e.KeyspaceEvents, "auto", "off")
	c.KeyspacePollInterval = p.duration("KEYSPACE_POLL_INTERVAL", e.KeyspacePoll, time.Millisecond, time.Hour)
	c.ShutdownTimeout = p.duration("SHUTDOWN_TIMEOUT", e.ShutdownTimeout, time.Second/10, 0)

	c.HTTPMaxConns = p.intIn("HTTP_MAX_CONNS", e.HTTPMaxConns, 1, 1_000_000)
	if _, port, err := net.SplitHostPort(e.HTTPAddr); err != nil {
		p.fail("HTTP_ADDR", e.HTTPAddr, "must be host:port or :port (port 0 picks a free port)")
	} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		p.fail("HTTP_ADDR", e.HTTPAddr, "port must be a number from 0 to 65535")
	}
	c.LogLevel = p.oneOf("LOG_LEVEL", e.LogLevel, "debug", "info", "warn", "error")
	c.LogFormat = p.oneOf("LOG_FORMAT", e.LogFormat, "json", "text")

	if c.ReplicaID == "" {
		host, _ := os.Hostname()
		c.ReplicaID = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	c.Ownership = p.oneOf("OWNERSHIP", e.Ownership, "rendezvous", "all")
	c.HeartbeatInterval = p.duration("HEARTBEAT_INTERVAL", e.HeartbeatInterval, 10*time.Millisecond, 0)
	c.HeartbeatTTL = p.duration("HEARTBEAT_TTL", e.HeartbeatTTL, 10*time.Millisecond, 0)
	if c.HeartbeatInterval > 0 && c.HeartbeatTTL > 0 && c.HeartbeatTTL < 2*c.HeartbeatInterval {
		p.fail("HEARTBEAT_TTL", e.HeartbeatTTL, "must be at least twice "+Prefix+"_HEARTBEAT_INTERVAL, or live replicas expire between beats")
	}
	return c
}

func (p *parser) amqp(e *env) AMQP {
	a := AMQP{
		URL: strings.TrimSpace(e.AMQPURL),
		TLS: TLS{CAFile: e.AMQPCAFile, CertFile: e.AMQPCertFile, KeyFile: e.AMQPKeyFile},
	}
	if a.URL != "" { // empty is allowed when no topic uses RabbitMQ (see sinksUsed)
		if u, ok := p.url("AMQP_URL", e.AMQPURL, "amqp", "amqps"); ok {
			a.TLS.Enabled = u.Scheme == "amqps"
			for _, f := range [][2]string{{"AMQP_CA_FILE", a.TLS.CAFile}, {"AMQP_CERT_FILE", a.TLS.CertFile}, {"AMQP_KEY_FILE", a.TLS.KeyFile}} {
				if f[1] != "" && !a.TLS.Enabled {
					p.fail(f[0], f[1], "TLS files need an amqps:// "+Prefix+"_AMQP_URL")
				}
			}
		}
	}
	p.tlsFiles("AMQP_", a.TLS)
	a.MaxMessageSize = int64(p.intIn("AMQP_MAX_MESSAGE_SIZE", e.AMQPMaxMessageSize, 1, 512<<20))
	return a
}

func (p *parser) kafka(e *env) Kafka {
	k := Kafka{
		Brokers:        p.list("KAFKA_BROKERS", e.KafkaBrokers),
		ClientID:       e.KafkaClientID,
		Compression:    p.oneOf("KAFKA_COMPRESSION", e.KafkaCompression, "none", "gzip", "snappy", "lz4", "zstd"),
		SASLMechanism:  p.oneOf("KAFKA_SASL_MECHANISM", e.KafkaSASLMechanism, "", "plain", "scram-sha-256", "scram-sha-512"),
		SASLUsername:   e.KafkaSASLUsername,
		SASLPassword:   e.KafkaSASLPassword,
		SessionTimeout: p.duration("KAFKA_SESSION_TIMEOUT", e.KafkaSessionTimeout, time.Second, 5*time.Minute),
		TLS: TLS{
			Enabled:  p.bool("KAFKA_TLS", e.KafkaTLS),
			CAFile:   e.KafkaCAFile,
			CertFile: e.KafkaCertFile,
			KeyFile:  e.KafkaKeyFile,
		},
	}
	if k.TLS.CAFile != "" || k.TLS.CertFile != "" {
		k.TLS.Enabled = true
	}
	p.tlsFiles("KAFKA_", k.TLS)
	for _, b := range k.Brokers {
		if _, _, err := net.SplitHostPort(b); err != nil {
			p.fail("KAFKA_BROKERS", e.KafkaBrokers, fmt.Sprintf("%q is not host:port", b))
		}
	}
	if k.SASLMechanism != "" && (k.SASLUsername == "" || k.SASLPassword == "") {
		p.fail("KAFKA_SASL_MECHANISM", e.KafkaSASLMechanism, "needs "+Prefix+"_KAFKA_SASL_USERNAME and "+Prefix+"_KAFKA_SASL_PASSWORD")
	}
	return k
}

// tlsFiles checks that the files named by <pre>CA_FILE, <pre>CERT_FILE and
// <pre>KEY_FILE load, so a bad file stops start-up instead of the first dial.
func (p *parser) tlsFiles(pre string, t TLS) {
	if t.CAFile != "" {
		if _, err := readCAPool(t.CAFile); err != nil {
			p.fail(pre+"CA_FILE", t.CAFile, err.Error())
		}
	}
	switch {
	case t.CertFile == "" && t.KeyFile == "":
	case t.CertFile == "":
		p.fail(pre+"KEY_FILE", t.KeyFile, "needs "+Prefix+"_"+pre+"CERT_FILE too")
	case t.KeyFile == "":
		p.fail(pre+"CERT_FILE", t.CertFile, "needs "+Prefix+"_"+pre+"KEY_FILE too")
	default:
		if _, err := readKeyPair(t.CertFile, t.KeyFile); err != nil {
			p.fail(pre+"CERT_FILE", t.CertFile, fmt.Sprintf("cannot be loaded with %s_%sKEY_FILE=%q: %v", Prefix, pre, t.KeyFile, err))
		}
	}
}

// topics parses DELAYBRIDGE_TOPICS and each listed topic's variables.
func (p *parser) topics(list string) []Topic {
	if strings.TrimSpace(list) == "" {
		p.fail("TOPICS", list, "is required: a comma list of topic names, e.g. orders,reminders")
		return nil
	}
	names := p.list("TOPICS", list)
	var out []Topic
	seen := map[string]string{} // VarName → topic name
	for _, name := range names {
		v := VarName(name)
		if prev, dup := seen[v]; dup {
			if prev == name {
				p.fail("TOPICS", list, fmt.Sprintf("lists topic %q twice", name))
			} else {
				p.fail("TOPICS", list, fmt.Sprintf("topics %q and %q share the variable prefix %s_TOPIC_%s_: rename one", prev, name, Prefix, v))
			}
			continue
		}
		seen[v] = name
		out = append(out, p.topic(name, v))
	}
	return out
}

func (p *parser) topic(name, v string) Topic {
	var te topicEnv
	prefix := Prefix + "_TOPIC_" + v
	if err := lookup(prefix, &te); err != nil {
		p.errs = append(p.errs, fmt.Errorf("read topic %s: %w", name, err))
		return Topic{Name: name, Var: v}
	}
	pre := "TOPIC_" + v + "_"
	t := Topic{
		Name:       name,
		Var:        v,
		Sink:       p.oneOf(pre+"SINK", te.Sink, "amqp", "kafka", "redis"),
		Slots:      p.intIn(pre+"SLOTS", te.Slots, 1, queue.MaxSlots),
		Key:        te.Key,
		Format:     queue.Format(p.oneOf(pre+"FORMAT", te.Format, string(queue.FormatRaw), string(queue.FormatEnvelope))),
		Exchange:   te.Exchange,
		RoutingKey: te.RoutingKey,
		KafkaTopic: te.KafkaTopic,
		KafkaKey:   p.oneOf(pre+"KAFKA_KEY", te.KafkaKey, "none", "id", "envelope"),
	}
	if queue.CheckTopicName(name) != nil {
		p.fail("TOPICS", name, queue.TopicNameRule)
	}
	if t.Slots&(t.Slots-1) != 0 {
		p.fail(pre+"SLOTS", te.Slots, fmt.Sprintf("must be a power of two from 1 to %d (1, 2, 4, … %d)", queue.MaxSlots, queue.MaxSlots))
	}
	if t.Key != "" && t.Slots > 1 {
		p.fail(pre+"KEY", te.Key, "an adopted key holds one slot: "+Prefix+"_"+pre+"SLOTS must be 1")
	}
	if t.RoutingKey == "" {
		t.RoutingKey = name
	}
	if t.KafkaTopic == "" {
		t.KafkaTopic = name
	}
	p.stream(&t, &te, pre)
	p.intake(&t, &te, pre)
	p.flow(&t, &te, pre)
	p.dedup(&t, &te, pre)
	p.fair(&t, &te, pre)
	return t
}

// sinksUsed requires the connection settings of every sink a topic uses.
func (p *parser) sinksUsed(c Config, e *env) {
	var amqpTopic, kafkaTopic string
	for _, t := range c.Topics {
		switch {
		case t.Sink == "amqp" && amqpTopic == "":
			amqpTopic = t.Name
		case t.Sink == "kafka" && kafkaTopic == "":
			kafkaTopic = t.Name
		}
	}
	if amqpTopic != "" && c.AMQP.URL == "" {
		p.fail("AMQP_URL", e.AMQPURL, fmt.Sprintf("is required: topic %q publishes to RabbitMQ", amqpTopic))
	}
	if kafkaTopic != "" && len(c.Kafka.Brokers) == 0 {
		p.fail("KAFKA_BROKERS", e.KafkaBrokers, fmt.Sprintf("is required: topic %q publishes to Kafka", kafkaTopic))
	}
}
