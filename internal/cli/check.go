package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/delaybridge/delaybridge/config"
	"github.com/delaybridge/delaybridge/queue"
	"github.com/delaybridge/delaybridge/redisclient"
	"github.com/delaybridge/delaybridge/sinks"
)

const checkUsage = `usage: delaybridge check [--json] [--publish-test TOPIC]

Validates the DELAYBRIDGE_* variables, reaches Redis and every topic's broker,
and verifies that each topic's destination exists (the AMQP exchange; on the
default exchange, the queue the routing key names; the Kafka topic; a Redis
stream key is absent or a stream) and so does an AMQP intake's queue. Credentials a broker refuses fail at once.
Whether a named exchange routes a key anywhere only the broker knows, at
publish time: --publish-test TOPIC sends one real test message (header
x-delaybridge-test) to that AMQP topic's exchange with its routing key and
says whether it was routed and where: a consumer of that queue receives it.
Redis's maxmemory-policy must keep every key: an allkeys-* policy deletes
scheduled messages when Redis fills, and fails the check.
Exit 0: all good; 1: a service is unreachable, a destination is missing or
Redis may evict messages; 2: bad configuration.
`

// checkTimeout bounds the wait for Redis and every broker.
const checkTimeout = 15 * time.Second

// checkLine is the result of one thing `check` verified.
type checkLine struct {
	Name  string `json:"name"`           // "redis" or "topic orders"
	Sink  string `json:"sink,omitempty"` // the topic's sink
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
	Note  string `json:"note,omitempty"` // what an operator should know of a check that passed
}

// runCheck is `delaybridge check`: validate the configuration, reach Redis
// and every topic's broker and destination, and say what is wrong.
func runCheck(ctx context.Context, args []string, s stdio) int {
	fs := newFlags("check", checkUsage, s)
	asJSON := fs.Bool("json", false, "print the result as JSON")
	testTopic := fs.String("publish-test", "", "send one test message to this AMQP `topic`'s destination (its exchange and routing key) and say where it went")
	pos, code, ok := parseFlags(fs, args, s)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return badUsage(fs, s, "takes no arguments, got %q", pos[0])
	}
	cfg, code := loadConfig(s)
	if code != exitOK {
		return code
	}
	if err := publishTestTopic(cfg, *testTopic); err != nil {
		return badUsage(fs, s, "%v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	durable, durableWarnings := checkDurability(ctx, cfg)
	lines := []checkLine{checkRedis(ctx, cfg), durable}
	quiet := slog.New(slog.NewTextHandler(s.err, &slog.HandlerOptions{Level: slog.LevelError}))
	for _, t := range cfg.Topics {
		l := checkLine{Name: "topic " + t.Name, Sink: t.Sink, OK: true}
		var test *string
		if t.Name == *testTopic {
			test = &t.RoutingKey
		}
		if err := checkTopic(ctx, cfg, t, quiet, test); err != nil {
			l.OK, l.Error = false, err.Error()
		} else if err := checkIntake(ctx, cfg, t); err != nil {
			l.OK, l.Error = false, err.Error()
		} else if test != nil {
			l.Note = publishedTo(t)
		} else {
			l.Note = routeNote(t)
		}
		lines = append(lines, l)
	}
	failed := false
	for _, l := range lines {
		failed = failed || !l.OK
	}
	warnings := append(unusedWarnings(cfg), durableWarnings...)
	if *asJSON {
		_ = writeJSON(s.out, map[string]any{"ok": !failed, "configuration": "ok", "topics": len(cfg.Topics), "checks": lines, "warnings": warnings})
	} else {
		printCheck(s, len(cfg.Topics), lines, warnings)
	}
	if failed {
		return exitFail
	}
	return exitOK
}

// unusedWarnings are the variables no setting reads (config.Unused), as
// `run` logs them: a warning, not a failure, since a leftover variable
// should not stop a deploy.
func unusedWarnings(cfg config.Config) []string {
	out := []string{}
	for _, name := range cfg.Unused(os.Environ()) {
		w := name + " is not used by this configuration (misspelt, or its topic is not in DELAYBRIDGE_TOPICS?)"
		if s := cfg.Suggest(name); s != "" {
			w = name + " is not used by this configuration: did you mean " + s + "?"
		}
		out = append(out, w)
	}
	return out
}

func printCheck(s stdio, topics int, lines []checkLine, warnings []string) {
	fmt.Fprintf(s.out, "configuration: ok (%s)\n", plural(topics, "topic"))
	for _, w := range warnings {
		fmt.Fprintf(s.out, "warning: %s\n", w)
	}
	for _, l := range lines {
		name := l.Name
		if l.Sink != "" {
			name = fmt.Sprintf("%s (%s)", l.Name, l.Sink)
		}
		switch {
		case l.OK && l.Note != "":
			fmt.Fprintf(s.out, "%s: ok (%s)\n", name, l.Note)
		case l.OK:
			fmt.Fprintf(s.out, "%s: ok\n", name)
		default:
			fmt.Fprintf(s.out, "%s: FAILED: %s\n", name, l.Error)
		}
	}
}

// tlsHint is err's text, with a hint when a TLS server without a client
// certificate from us dropped the connection. Under TLS 1.3 the client's
// handshake ends before the server checks for a certificate, so the
// server's "certificate required" alert races the first command: the
// client may see only a reset connection or EOF.
func tlsHint(err error, t config.TLS) string {
	if !t.Enabled || t.CertFile != "" {
		return err.Error()
	}
	if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, io.EOF) {
		return err.Error() + " (the server closed the TLS connection: does it require a client certificate? set DELAYBRIDGE_REDIS_CERT_FILE and DELAYBRIDGE_REDIS_KEY_FILE)"
	}
	return err.Error()
}

// checkRedis reaches Redis and reads its memory policy: one that evicts any
// key (allkeys-*) would delete scheduled messages when Redis fills, so it
// fails. A user not granted INFO still passes, with a note.
func checkRedis(ctx context.Context, cfg config.Config) checkLine {
	rdb, err := redisclient.New(cfg.Redis)
	if err != nil {
		return checkLine{Name: "redis", Error: err.Error()}
	}
	defer rdb.Close()
	if err := rdb.Ping(ctx).Err(); err != nil {
		return checkLine{Name: "redis", Error: tlsHint(err, cfg.Redis.TLS)}
	}
	m, err := queue.New(rdb).Memory(ctx)
	switch {
	case err != nil:
		return checkLine{Name: "redis", OK: true, Note: fmt.Sprintf("maxmemory-policy unknown (%v)", err)}
	case m.Evicting():
		return checkLine{Name: "redis", Error: m.EvictingError().Error()}
	case m.Full():
		return checkLine{Name: "redis", OK: true, Note: fmt.Sprintf("maxmemory-policy %s; FULL: %d of %d bytes used, new messages are refused until the backlog drains or maxmemory is raised", m.Policy, m.Used, m.Max)}
	case strings.HasPrefix(m.Policy, "volatile-"):
		return checkLine{Name: "redis", OK: true, Note: fmt.Sprintf("maxmemory-policy %s: delaybridge's keys carry no TTL and are never evicted; a full Redis refuses new messages as under noeviction", m.Policy)}
	}
	return checkLine{Name: "redis", OK: true, Note: "maxmemory-policy " + m.Policy}
}

// checkTopic connects the topic's sink, then asks whether its destination
// exists and, with a test key, whether a message with that key is routed.
func checkTopic(ctx context.Context, cfg config.Config, t config.Topic, log *slog.Logger, testKey *string) error {
	sink, err := newSink(cfg, t, log)
	if err != nil {
		return err
	}
	defer sink.Close()
	if err := waitReady(ctx, sink); err != nil {
		return err
	}
	if c, ok := sink.(sinks.Checker); ok {
		if err := c.CheckDestination(ctx); err != nil {
			return err
		}
	}
	if testKey != nil {
		return publishTest(ctx, sink, t, *testKey)
	}
	return nil
}

// waitReady polls a sink's Ping until it succeeds or ctx ends. Credentials
// the broker refused end it at once: no retry fixes them.
func waitReady(ctx context.Context, s sinks.Sink) error {
	p, ok := s.(sinks.Pinger)
	if !ok {
		return nil
	}
	for {
		err := p.Ping(ctx)
		if err == nil {
			return nil
		}
		if errors.Is(err, sinks.ErrAuth) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}
