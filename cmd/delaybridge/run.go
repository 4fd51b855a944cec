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
	if err := serve(ctx, cfg, log); err != nil {
		log.Error("delaybridge stopped", "err", err)
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
	log.Info("delaybridge starting", "version", version, "commit", commit, "replica", cfg.ReplicaID, "config", cfg.Redacted())
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

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics := forwarder.NewMetrics(reg)

	fw, err := forwarder.New(forwarder.Options{
		Queue:              queue.New(rdb),
		Topics:             topics,
		KeyPrefix:          cfg.KeyPrefix,
		BatchSize:          cfg.BatchSize,
		MaxInflightBatches: cfg.MaxInflightBatches,
		Lease:              cfg.Lease,
		MaxAttempts:        cfg.MaxAttempts,
		RetryBackoff:       cfg.RetryBackoff,
		RetryBackoffMax:    cfg.RetryBackoffMax,
		PollInterval:       cfg.PollInterval,
		ShutdownTimeout:    cfg.ShutdownTimeout,
		ReplicaID:          cfg.ReplicaID,
		AllSlots:           cfg.Ownership == "all",
		HeartbeatInterval:  cfg.HeartbeatInterval,
		HeartbeatTTL:       cfg.HeartbeatTTL,
		Metrics:            metrics,
		Log:                log,
	})
	if err != nil {
		return err
	}

	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.HTTPAddr, err)
	}
	dests := newDestinationWatch(topics, log)
	wctx, stopWatch := context.WithCancel(ctx)
	var watching sync.WaitGroup
	watching.Go(func() { dests.run(wctx) })
	defer watching.Wait()
	defer stopWatch()

	srv := &http.Server{
		Handler:           routes(reg, rdb, topics, dests),
		ReadHeaderTimeout: 5 * time.Second,
	}
	httpDone := make(chan error, 1)
	go func() { httpDone <- srv.Serve(ln) }()
	log.Info("http listening", "addr", ln.Addr().String())

	runErr := fw.Run(ctx)

	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	if err := <-httpDone; err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Warn("http server", "err", err)
	}
	return runErr
}

// routes serves only metrics and probes. dests (nil: none) is the
// destination watch whose last result /readyz reports.
func routes(reg *prometheus.Registry, rdb redis.UniversalClient, topics []forwarder.Topic, dests *destinationWatch) http.Handler {
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
