// Command devkafka is a small local Kafka for development, demos and tests:
// one broker built on github.com/twmb/franz-go/pkg/kfake, which speaks the
// real Kafka wire protocol over TCP, so delaybridge and any Kafka client
// talk to it as to a real cluster.
//
// It is a development tool, not a Kafka: no replication, no real durability
// guarantees, no tuning. Point delaybridge at a real cluster with
// DELAYBRIDGE_KAFKA_BROKERS (and the TLS and SASL settings) in production.
//
// It prints one line on stdout once it listens and its topics exist,
//
//	devkafka ready addr=127.0.0.1:9092 topics=orders,reminders
//
// and exits 0 on SIGTERM or SIGINT. With -data-dir, kfake persists topics,
// records and committed offsets there and reloads them on the next start
// (saved in full on a clean shutdown; after a kill -9 the last writes may
// be lost unless -sync is set).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "devkafka:", err)
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

var errUsage = errors.New("usage")

type options struct {
	addr            string
	topics          []string
	partitions      int
	dataDir         string
	sync            bool
	maxMessageBytes int
	logLevel        kfake.LogLevel
}

func parse(args []string, stderr io.Writer) (options, error) {
	var o options
	var topics, level string
	fs := flag.NewFlagSet("devkafka", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `devkafka: a local one-broker Kafka for development and tests (kfake).
Not for production: point delaybridge at a real Kafka with DELAYBRIDGE_KAFKA_BROKERS.

Prints "devkafka ready addr=... topics=..." on stdout when it listens; exits 0 on SIGTERM/SIGINT.

Flags:
`)
		fs.PrintDefaults()
	}
	fs.StringVar(&o.addr, "addr", "127.0.0.1:9092", "host:port to listen on; also the address the broker advertises, so clients must be able to dial it (port 0: any free port)")
	fs.StringVar(&topics, "topics", "", "comma list of topics to create if missing")
	fs.IntVar(&o.partitions, "partitions", 1, "partitions of each topic created")
	fs.StringVar(&o.dataDir, "data-dir", "", "keep topics, records and offsets in this directory across restarts (kfake persistence; saved in full on a clean shutdown)")
	fs.BoolVar(&o.sync, "sync", false, "with -data-dir: fsync every write, so a kill -9 loses nothing acknowledged (slower)")
	fs.IntVar(&o.maxMessageBytes, "max-message-bytes", 0, "broker message.max.bytes: the largest record batch it takes (0: kfake's default, 1048588)")
	fs.StringVar(&level, "log-level", "none", "kfake log level on stderr: none, error, warn, info or debug")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, err
		}
		return o, fmt.Errorf("%w: %w", errUsage, err)
	}
	var problems []error
	if fs.NArg() > 0 {
		problems = append(problems, fmt.Errorf("unexpected arguments %q", fs.Args()))
	}
	host, port, err := net.SplitHostPort(o.addr)
	if p, perr := strconv.Atoi(port); err != nil || perr != nil || p < 0 || p > 65535 || host == "" {
		problems = append(problems, fmt.Errorf("-addr %q is not host:port", o.addr))
	}
	for t := range strings.SplitSeq(topics, ",") {
		if t = strings.TrimSpace(t); t != "" && !slices.Contains(o.topics, t) {
			o.topics = append(o.topics, t)
		}
	}
	if o.partitions < 1 {
		problems = append(problems, fmt.Errorf("-partitions %d must be at least 1", o.partitions))
	}
	if o.maxMessageBytes < 0 {
		problems = append(problems, fmt.Errorf("-max-message-bytes %d is negative", o.maxMessageBytes))
	}
	if o.sync && o.dataDir == "" {
		problems = append(problems, errors.New("-sync needs -data-dir"))
	}
	levels := map[string]kfake.LogLevel{"none": kfake.LogLevelNone, "error": kfake.LogLevelError,
		"warn": kfake.LogLevelWarn, "info": kfake.LogLevelInfo, "debug": kfake.LogLevelDebug}
	var ok bool
	if o.logLevel, ok = levels[strings.ToLower(level)]; !ok {
		problems = append(problems, fmt.Errorf("-log-level %q is not none, error, warn, info or debug", level))
	}
	if err := errors.Join(problems...); err != nil {
		return o, fmt.Errorf("%w: %w", errUsage, err)
	}
	return o, nil
}

// run serves until ctx ends.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parse(args, stderr)
	if err != nil {
		return err
	}
	host, portText, _ := net.SplitHostPort(o.addr)
	port, _ := strconv.Atoi(portText)
	opts := []kfake.Opt{
		kfake.Ports(port),
		// kfake listens on 127.0.0.1; listen where asked instead.
		kfake.ListenFn(func(network, _ string) (net.Listener, error) {
			var lc net.ListenConfig
			return lc.Listen(ctx, network, net.JoinHostPort(host, portText))
		}),
		kfake.WithLogger(kfake.BasicLogger(stderr, o.logLevel)),
		kfake.DefaultNumPartitions(o.partitions),
	}
	if o.dataDir != "" {
		opts = append(opts, kfake.DataDir(o.dataDir))
	}
	if o.sync {
		opts = append(opts, kfake.SyncWrites())
	}
	if o.maxMessageBytes > 0 {
		opts = append(opts, kfake.BrokerConfigs(map[string]string{"message.max.bytes": strconv.Itoa(o.maxMessageBytes)}))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return fmt.Errorf("start broker on %s: %w", o.addr, err)
	}
	// Close persists the data directory: it must run on every way out.
	defer c.Close()
	addr := c.ListenAddrs()[0]

	if err := createTopics(ctx, addr, o.topics, o.partitions); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "devkafka ready addr=%s topics=%s\n", addr, strings.Join(o.topics, ","))
	<-ctx.Done()
	return nil
}

// createTopics creates the topics that do not exist yet. Topics reloaded
// from -data-dir keep their partitions.
func createTopics(ctx context.Context, addr string, topics []string, partitions int) error {
	if len(topics) == 0 {
		return nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return fmt.Errorf("admin client: %w", err)
	}
	defer cl.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	for _, t := range topics {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = t, int32(partitions), 1
		req.Topics = append(req.Topics, rt)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("create topics %v: %w", topics, err)
	}
	var errs []error
	for _, t := range resp.Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			errs = append(errs, fmt.Errorf("create topic %s: %w", t.Topic, err))
		}
	}
	return errors.Join(errs...)
}
