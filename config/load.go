package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"reflect"
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
func Load() (Config, error) {
	var e env
	if err := lookup(Prefix, &e); err != nil {
		return Config{}, fmt.Errorf("read environment: %w", err)
	}
	p := &parser{}
	p.readFiles(Prefix, &e)
	c := p.global(&e)
	names := p.list("TOPICS", e.Topics)
	if len(names) == 0 && e.Topics == "" {
		p.fail("TOPICS", "", "is required: a comma list of topic names, e.g. orders,reminders")
	}
	seen := map[string]string{}
	for _, name := range names {
		v := VarName(name)
		if prev, dup := seen[v]; dup {
			p.fail("TOPICS", e.Topics, fmt.Sprintf("topics %q and %q share the variable prefix %s_TOPIC_%s_", prev, name, Prefix, v))
			continue
		}
		seen[v] = name
		c.Topics = append(c.Topics, p.topic(name, v))
	}
	if err := errors.Join(p.errs...); err != nil {
		return Config{}, err
	}
	return c, nil
}

// VarName is the upper-cased form of a topic name used in its variables:
// every character outside A-Z0-9 becomes '_'.
func VarName(topic string) string {
	b := []byte(strings.ToUpper(topic))
	for i, c := range b {
		if (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			b[i] = '_'
		}
	}
	return string(b)
}

type parser struct {
	errs    []error
	secrets map[string]bool
}

func (p *parser) fail(name, value, problem string) {
	if p.secrets[name] {
		value = redact(value)
	}
	p.errs = append(p.errs, &FieldError{Var: Prefix + "_" + name, Value: value, Problem: problem})
}

// readFiles fills every secret field whose NAME_FILE variable is set from that
// file, and notes which variables are secret.
func (p *parser) readFiles(prefix string, spec any) {
	p.secrets = map[string]bool{}
	v := reflect.ValueOf(spec).Elem()
	for i := 0; i < v.NumField(); i++ {
		f := v.Type().Field(i)
		if f.Tag.Get("secret") != "true" {
			continue
		}
		name := f.Tag.Get("envconfig")
		p.secrets[name] = true
		path, ok := os.LookupEnv(prefix + "_" + name + "_FILE")
		if !ok || path == "" {
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			p.errs = append(p.errs, &FieldError{Var: prefix + "_" + name + "_FILE", Value: path, Problem: fmt.Sprintf("cannot be read: %v", err)})
			continue
		}
		v.Field(i).SetString(strings.TrimRight(string(b), "\r\n"))
	}
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
	c.Redis = p.redis(e)
	c.AMQP = p.amqp(e)
	c.Kafka = p.kafka(e)

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
	c.ShutdownTimeout = p.duration("SHUTDOWN_TIMEOUT", e.ShutdownTimeout, time.Second/10, 0)

	if _, port, err := net.SplitHostPort(e.HTTPAddr); err != nil {
		p.fail("HTTP_ADDR", e.HTTPAddr, "must be host:port or :port (port 0 picks a free port)")
	} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		p.fail("HTTP_ADDR", e.HTTPAddr, "port must be a number from 0 to 65535")
	}
	c.LogLevel = p.oneOf("LOG_LEVEL", strings.ToLower(e.LogLevel), "debug", "info", "warn", "error")
	c.LogFormat = p.oneOf("LOG_FORMAT", strings.ToLower(e.LogFormat), "json", "text")

	if c.ReplicaID == "" {
		host, _ := os.Hostname()
		c.ReplicaID = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	c.Ownership = p.oneOf("OWNERSHIP", strings.ToLower(e.Ownership), "rendezvous", "all")
	c.HeartbeatInterval = p.duration("HEARTBEAT_INTERVAL", e.HeartbeatInterval, 10*time.Millisecond, 0)
	c.HeartbeatTTL = p.duration("HEARTBEAT_TTL", e.HeartbeatTTL, 10*time.Millisecond, 0)
	if c.HeartbeatInterval > 0 && c.HeartbeatTTL > 0 && c.HeartbeatTTL < 2*c.HeartbeatInterval {
		p.fail("HEARTBEAT_TTL", e.HeartbeatTTL, "must be at least twice "+Prefix+"_HEARTBEAT_INTERVAL, or live replicas expire between beats")
	}
	return c
}

func (p *parser) redis(e *env) Redis {
	r := Redis{
		URL:            e.RedisURL,
		Addrs:          p.list("REDIS_ADDRS", e.RedisAddrs),
		Cluster:        p.bool("REDIS_CLUSTER", e.RedisCluster),
		SentinelMaster: e.RedisSentinelMaster,
		Username:       e.RedisUsername,
		Password:       e.RedisPassword,
		TLS: TLS{
			CAFile:             p.file("REDIS_CA_FILE", e.RedisCAFile),
			CertFile:           p.file("REDIS_CERT_FILE", e.RedisCertFile),
			KeyFile:            p.file("REDIS_KEY_FILE", e.RedisKeyFile),
			InsecureSkipVerify: p.bool("REDIS_TLS_INSECURE", e.RedisTLSInsecure),
		},
	}
	u, ok := p.url("REDIS_URL", e.RedisURL, "redis", "rediss")
	if ok && u.Scheme == "rediss" {
		r.TLS.Enabled = true
	}
	if r.TLS.CAFile != "" || r.TLS.CertFile != "" {
		r.TLS.Enabled = true
	}
	if (r.TLS.CertFile == "") != (r.TLS.KeyFile == "") {
		p.fail("REDIS_CERT_FILE", e.RedisCertFile, "needs "+Prefix+"_REDIS_KEY_FILE too, and the other way round")
	}
	for _, a := range r.Addrs {
		if _, _, err := net.SplitHostPort(a); err != nil {
			p.fail("REDIS_ADDRS", e.RedisAddrs, fmt.Sprintf("%q is not host:port", a))
		}
	}
	if r.Cluster && r.SentinelMaster != "" {
		p.fail("REDIS_CLUSTER", e.RedisCluster, "cannot be true together with "+Prefix+"_REDIS_SENTINEL_MASTER")
	}
	if (r.Cluster || r.SentinelMaster != "") && len(r.Addrs) == 0 {
		p.fail("REDIS_ADDRS", e.RedisAddrs, "is required with Redis Cluster or Sentinel")
	}
	return r
}

func (p *parser) amqp(e *env) AMQP {
	a := AMQP{
		URL: e.AMQPURL,
		TLS: TLS{
			CAFile:   p.file("AMQP_CA_FILE", e.AMQPCAFile),
			CertFile: p.file("AMQP_CERT_FILE", e.AMQPCertFile),
			KeyFile:  p.file("AMQP_KEY_FILE", e.AMQPKeyFile),
		},
	}
	u, ok := p.url("AMQP_URL", e.AMQPURL, "amqp", "amqps")
	if ok && u.Scheme == "amqps" {
		a.TLS.Enabled = true
	}
	if a.TLS.CAFile != "" || a.TLS.CertFile != "" {
		if ok && u.Scheme != "amqps" {
			p.fail("AMQP_CA_FILE", e.AMQPCAFile, "TLS files need an amqps:// "+Prefix+"_AMQP_URL")
		}
	}
	if (a.TLS.CertFile == "") != (a.TLS.KeyFile == "") {
		p.fail("AMQP_CERT_FILE", e.AMQPCertFile, "needs "+Prefix+"_AMQP_KEY_FILE too, and the other way round")
	}
	a.MaxMessageSize = int64(p.intIn("AMQP_MAX_MESSAGE_SIZE", e.AMQPMaxMessageSize, 1, 512<<20))
	return a
}

func (p *parser) kafka(e *env) Kafka {
	k := Kafka{
		Brokers:       p.list("KAFKA_BROKERS", e.KafkaBrokers),
		ClientID:      e.KafkaClientID,
		Compression:   p.oneOf("KAFKA_COMPRESSION", strings.ToLower(e.KafkaCompression), "none", "gzip", "snappy", "lz4", "zstd"),
		SASLMechanism: p.oneOf("KAFKA_SASL_MECHANISM", strings.ToLower(e.KafkaSASLMechanism), "", "plain", "scram-sha-256", "scram-sha-512"),
		SASLUsername:  e.KafkaSASLUsername,
		SASLPassword:  e.KafkaSASLPassword,
		TLS: TLS{
			Enabled:  p.bool("KAFKA_TLS", e.KafkaTLS),
			CAFile:   p.file("KAFKA_CA_FILE", e.KafkaCAFile),
			CertFile: p.file("KAFKA_CERT_FILE", e.KafkaCertFile),
			KeyFile:  p.file("KAFKA_KEY_FILE", e.KafkaKeyFile),
		},
	}
	if k.TLS.CAFile != "" || k.TLS.CertFile != "" {
		k.TLS.Enabled = true
	}
	if (k.TLS.CertFile == "") != (k.TLS.KeyFile == "") {
		p.fail("KAFKA_CERT_FILE", e.KafkaCertFile, "needs "+Prefix+"_KAFKA_KEY_FILE too, and the other way round")
	}
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
		Sink:       p.oneOf(pre+"SINK", strings.ToLower(te.Sink), "amqp", "kafka"),
		Slots:      p.intIn(pre+"SLOTS", te.Slots, 1, queue.MaxSlots),
		Key:        te.Key,
		Format:     queue.Format(p.oneOf(pre+"FORMAT", strings.ToLower(te.Format), "raw", "envelope")),
		Exchange:   te.Exchange,
		RoutingKey: te.RoutingKey,
		KafkaTopic: te.KafkaTopic,
		KafkaKey:   p.oneOf(pre+"KAFKA_KEY", strings.ToLower(te.KafkaKey), "none", "id", "envelope"),
	}
	if strings.ContainsAny(name, "{} \t\r\n") {
		p.fail("TOPICS", name, "a topic name may not hold braces or white space")
	}
	if t.Slots&(t.Slots-1) != 0 {
		p.fail(pre+"SLOTS", te.Slots, "must be a power of two from 1 to 1024 (1, 2, 4, … 1024)")
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
	if t.KafkaKey == "envelope" && t.Format != queue.FormatEnvelope {
		p.fail(pre+"KAFKA_KEY", te.KafkaKey, "envelope keys need "+Prefix+"_"+pre+"FORMAT=envelope")
	}
	return t
}

func (p *parser) intIn(name, s string, lo, hi int) int {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < lo || n > hi {
		p.fail(name, s, fmt.Sprintf("must be a whole number from %d to %d", lo, hi))
		return lo
	}
	return n
}

// duration parses a Go duration of at least lo and, when hi > 0, at most hi.
func (p *parser) duration(name, s string, lo, hi time.Duration) time.Duration {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	switch {
	case err != nil:
		p.fail(name, s, "must be a duration such as 500ms, 30s or 5m")
	case d < lo:
		p.fail(name, s, fmt.Sprintf("must be at least %s", lo))
	case hi > 0 && d > hi:
		p.fail(name, s, fmt.Sprintf("must be at most %s", hi))
	default:
		return d
	}
	return lo
}

func (p *parser) bool(name, s string) bool {
	b, err := strconv.ParseBool(strings.TrimSpace(s))
	if err != nil {
		p.fail(name, s, "must be true or false")
	}
	return b
}

func (p *parser) oneOf(name, s string, allowed ...string) string {
	for _, a := range allowed {
		if s == a {
			return s
		}
	}
	shown := make([]string, len(allowed))
	for i, a := range allowed {
		if a == "" {
			a = `"" (empty)`
		}
		shown[i] = a
	}
	p.fail(name, s, "must be one of: "+strings.Join(shown, ", "))
	return allowed[0]
}

func (p *parser) list(name, s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part != "" {
			out = append(out, part)
		}
	}
	if s != "" && len(out) == 0 {
		p.fail(name, s, "must be a comma list with at least one entry")
	}
	return out
}

func (p *parser) file(name, path string) string {
	if path == "" {
		return ""
	}
	if _, err := os.Stat(path); err != nil {
		p.fail(name, path, fmt.Sprintf("cannot be read: %v", err))
	}
	return path
}

func (p *parser) url(name, s string, schemes ...string) (*url.URL, bool) {
	u, err := url.Parse(s)
	if err != nil {
		p.fail(name, s, "is not a URL")
		return nil, false
	}
	for _, sc := range schemes {
		if u.Scheme == sc && u.Host != "" {
			return u, true
		}
	}
	p.fail(name, s, fmt.Sprintf("must be a URL with scheme %s and a host", strings.Join(schemes, " or ")))
	return nil, false
}

// redact hides the password of a URL, or the whole value of any other secret.
func redact(s string) string {
	if s == "" {
		return ""
	}
	if u, err := url.Parse(s); err == nil && u.Scheme != "" && u.Host != "" {
		return u.Redacted()
	}
	return "REDACTED"
}

// Redacted returns a URL with its password replaced, for logs.
func Redacted(raw string) string { return redact(raw) }
