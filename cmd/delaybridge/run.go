package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/config"
	"github.com/delaybridge/delaybridge/forwarder"
	"github.com/delaybridge/delaybridge/internal/procs"
	"github.com/delaybridge/delaybridge/queue"
)

// runDaemon is `delaybridge run`: forward until SIGTERM, then shut down
// within DELAYBRIDGE_SHUTDOWN_TIMEOUT.
func runDaemon(ctx context.Context, args []string, s stdio) int {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
		fmt.Fprintln(s.out, "usage: delaybridge run\n\nRuns the daemon, configured by DELAYBRIDGE_* environment variables (see README.md).")
		return exitOK
	}
	if len(args) > 0 {
		return misused(s.err, "run", fmt.Sprintf("takes no arguments, got %q", args[0]))
	}
	cfg, code := loadConfig(s)
	if code != exitOK {
		return code
	}
	log := newLogger(cfg, s)
	redis.SetLogger(redisLogger{log}) // the library's global: see logging.go
	stopProcs := adaptProcs(ctx, log)
	defer stopProcs()
	if err := serve(ctx, cfg, log); err != nil {
		log.Error("delaybridge stopped", "err", err)
		if errors.Is(err, queue.ErrLayoutMismatch) {
			return exitConfig // the topic settings disagree with live replicas'
		}
		return exitFail
	}
	log.Info("delaybridge stopped cleanly")
	return exitOK
}

// loadConfig loads the configuration, printing every problem.
func loadConfig(s stdio) (config.Config, int) {
	cfg, err := config.Load()
	if err != nil {
		fmt.Fprintln(s.err, "delaybridge: bad configuration:")
		for _, e := range flatten(err) {
			fmt.Fprintf(s.err, "  %v\n", e)
		}
		return cfg, exitConfig
	}
	return cfg, exitOK
}

// flatten lists the errors joined in err.
func flatten(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// serve runs the daemon until ctx ends.
func serve(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	log.Info("delaybridge starting", "version", version, "commit", commit, "built", date, "replica", cfg.ReplicaID, "config", cfg.Redacted())
	for _, name := range cfg.Unused(os.Environ()) {
		log.Warn("variable is not used by this configuration (misspelt, or its topic is not in DELAYBRIDGE_TOPICS?)", "var", name)
	}
	rdb, err := cfg.Redis.Client()
	if err != nil {
		return fmt.Errorf("redis client: %w", err)
	}
	defer rdb.Close()

	topics, closeSinks, err := buildSinks(cfg, log)
	if err != nil {
		return err
	}
	defer closeSinks()

	reg := newRegistry()
	metrics := forwarder.NewMetrics(reg)

	fw, err := forwarder.New(forwarder.Options{
		Queue:                queue.New(rdb),
		Topics:               topics,
		KeyPrefix:            cfg.KeyPrefix,
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
		Metrics:              metrics,
		Log:                  log,
	})
	if err != nil {
		return err
	}

	intakes, err := buildIntakes(cfg, queue.New(rdb), reg, log)
	if err != nil {
		return err
	}
	dests, stopWatch := watchDestinations(ctx, topics, log)
	defer stopWatch()

	stopHTTP, err := startHTTPAndAPI(ctx, cfg, routes(reg, rdb, topics, dests, intakes), queue.New(rdb), reg, log)
	if err != nil {
		return err
	}
	defer stopHTTP()
	// The probes answer while the topics are registered: a Redis that
	// refuses the daemon shows in /readyz and the log, not as silence.
	if err := registerTopics(ctx, queue.New(rdb), cfg, log); err != nil {
		if ctx.Err() != nil && !errors.Is(err, queue.ErrLayoutMismatch) {
			log.Warn("stopped before the topics could be registered; nothing was claimed", "err", err)
			return nil
		}
		return err
	}
	stopIntakes := startIntakes(ctx, intakes, log)
	defer stopIntakes()
	return fw.Run(ctx)
}

// watchDestinations checks every topic's destination in the background
// until stop is called (see destinationWatch).
func watchDestinations(ctx context.Context, topics []forwarder.Topic, log *slog.Logger) (dests *destinationWatch, stop func()) {
	dests = newDestinationWatch(topics, log)
	wctx, cancel := context.WithCancel(ctx)
	var watching sync.WaitGroup
	watching.Go(func() { dests.run(wctx) })
	return dests, func() {
		cancel()
		watching.Wait()
	}
}

// adaptProcs runs the Go scheduler on one processor while the daemon needs
// less (internal/procs) until stop is called.
func adaptProcs(ctx context.Context, log *slog.Logger) (stop func()) {
	pctx, cancel := context.WithCancel(ctx)
	var running sync.WaitGroup
	running.Go(func() { procs.Run(pctx, procs.DefaultPolicy(), log) })
	return func() {
		cancel()
		running.Wait()
	}
}

// startHTTP serves handler on addr until the returned stop is called.
func startHTTP(addr string, handler http.Handler, log *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	log.Info("http listening", "addr", ln.Addr().String())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("http server", "err", err)
		}
	}, nil
}

// newRegistry is the daemon's own Prometheus registry with what every
// replica exports besides the pipeline's metrics: the Go runtime, the
// process, and delaybridge_build_info.
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		currentBuild().collector(),
	)
	return reg
}

// routes serves only metrics and probes. dests (nil: none) is the
// destination watch whose last result /readyz reports, as it reports the
// intakes' health.
func routes(reg *prometheus.Registry, rdb redis.UniversalClient, topics []forwarder.Topic, dests *destinationWatch, intakes []intakeRunner) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		err := ready(ctx, rdb, topics)
		if err == nil {
			err = dests.err()
		}
		if err == nil {
			err = intakesHealth(intakes)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	return mux
}

// ready reports whether Redis and every sink are reachable.
func ready(ctx context.Context, rdb redis.UniversalClient, topics []forwarder.Topic) error {
	if err := rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	for _, t := range topics {
		if p, ok := t.Sink.(interface{ Ping(context.Context) error }); ok {
			if err := p.Ping(ctx); err != nil {
				return fmt.Errorf("sink of topic %s: %w", t.Name, err)
			}
		}
	}
	return nil
}
