package cli

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
	"go.opentelemetry.io/otel/trace"

	"github.com/delaybridge/delaybridge/config"
	"github.com/delaybridge/delaybridge/console"
	"github.com/delaybridge/delaybridge/forwarder"
	"github.com/delaybridge/delaybridge/internal/logrepeat"
	"github.com/delaybridge/delaybridge/internal/procs"
	"github.com/delaybridge/delaybridge/queue"
	"github.com/delaybridge/delaybridge/redisclient"
	"github.com/delaybridge/delaybridge/sinks"
)

// runDaemon is `delaybridge run`: forward until SIGTERM, then shut down
// within DELAYBRIDGE_SHUTDOWN_TIMEOUT.
func runDaemon(ctx context.Context, args []string, s stdio) int {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
		fmt.Fprintln(s.out, "usage: delaybridge run\n\nRuns the daemon, configured by DELAYBRIDGE_* environment variables (see docs/configuration.md).")
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
	// go-redis's logger is a global of the library: set once, here, before
	// any client (see logging.go); its repeats fold until the daemon ends.
	redisRepeats := logrepeat.New(log, 0)
	repeatsCtx, stopRepeats := context.WithCancel(ctx)
	repeatsDone := make(chan struct{})
	go func() { defer close(repeatsDone); redisRepeats.Run(repeatsCtx) }()
	defer func() { stopRepeats(); <-repeatsDone }()
	redis.SetLogger(redisLogger{log: log, repeats: redisRepeats})
	stopProcs := adaptProcs(ctx, log)
	defer stopProcs()
	tr, code := setupTracing(ctx, s, log)
	if code != exitOK {
		return code
	}
	defer shutdownTracing(tr, log) // after serve: its last spans too
	if err := serve(ctx, cfg, log, tr.Provider, s.build); err != nil {
		log.Error("delaybridge stopped", "err", err)
		if errors.Is(err, queue.ErrLayoutMismatch) {
			return exitConfig // the topic settings disagree with live replicas'
		}
		if errors.Is(err, queue.ErrDurabilityUnsupported) {
			return exitConfig // WAIT_AOF against a server that cannot confirm it
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
		for _, m := range config.Misspelt(os.Environ()) {
			fmt.Fprintf(s.err, "  %s\n", m)
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
// tp is the tracer provider, nil when tracing is off; b the build it runs as.
func serve(ctx context.Context, cfg config.Config, log *slog.Logger, tp trace.TracerProvider, b Build) error {
	bi := b.info()
	log.Info("delaybridge starting", "version", bi.Version, "commit", bi.Commit, "built", bi.Date, "replica", cfg.ReplicaID, "config", cfg.Redacted())
	for _, name := range cfg.Unused(os.Environ()) {
		log.Warn("variable is not used by this configuration (misspelt, or its topic is not in DELAYBRIDGE_TOPICS?)", "var", name, "did_you_mean", cfg.Suggest(name))
	}
	rdb, err := redisclient.New(cfg.Redis)
	if err != nil {
		return fmt.Errorf("redis client: %w", err)
	}
	defer rdb.Close()
	accept := queue.New(rdb).WithDurability(cfg.RedisWait.Durability())
	if err := accept.CheckDurability(ctx); err != nil {
		return fmt.Errorf("%s_REDIS_WAIT_AOF=true: %w", config.Prefix, err)
	}

	topics, closeSinks, err := buildSinks(cfg, log)
	if err != nil {
		return err
	}
	defer closeSinks()

	reg := newRegistry(b)
	metrics := forwarder.NewMetrics(reg)

	opt := forwarderOptions(cfg, queue.New(rdb), topics, metrics, log)
	if !opt.AllSlots { // OWNERSHIP=all: no heartbeat
		hb, err := redisclient.NewHeartbeat(cfg.Redis)
		if err != nil {
			return fmt.Errorf("redis client: %w", err)
		}
		defer hb.Close()
		opt.HeartbeatQueue = queue.New(hb)
	}
	opt.Tracing = forwarderTracing(cfg, tracer(tp, b))
	fw, err := forwarder.New(opt)
	if err != nil {
		return err
	}

	intakes, err := buildIntakes(cfg, durableQueue(queue.New(rdb), cfg, reg, "intake"), reg, log, tracer(tp, b))
	if err != nil {
		return err
	}
	dests, stopWatch := watchDestinations(ctx, topics, log)
	defer stopWatch()

	mem := newMemoryWatch(queue.New(rdb), metrics, log)
	defer runUntilStopped(ctx, mem.run)() // starts it now, stops it on return
	stopHTTP, err := startHTTPAndAPI(ctx, cfg, routes(reg, rdb, topics, dests, intakes, mem, accept), queue.New(rdb), reg, log, tracer(tp, b))
	if err != nil {
		return err
	}
	defer stopHTTP()
	// The probes answer while the topics are registered: a Redis that
	// refuses the daemon shows in /readyz and the log, not as silence.
	stopRegister, err := startRegistry(ctx, queue.New(rdb), cfg, log)
	if err != nil || stopRegister == nil {
		return err
	}
	defer stopRegister()
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

// runUntilStopped runs fn in a goroutine until stop is called, which cancels
// its context and waits for it.
func runUntilStopped(ctx context.Context, fn func(context.Context)) (stop func()) {
	fctx, cancel := context.WithCancel(ctx)
	var running sync.WaitGroup
	running.Go(func() { fn(fctx) })
	return func() {
		cancel()
		running.Wait()
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

// startHTTP serves handler on addr (DELAYBRIDGE_HTTP_ADDR) until the
// returned stop is called, with the console's DefaultTimeouts and at most
// maxConns connections open (DELAYBRIDGE_HTTP_MAX_CONNS).
func startHTTP(addr string, maxConns int, handler http.Handler, log *slog.Logger) (stop func(), err error) {
	return startHTTPWith(addr, maxConns, handler, log, console.DefaultTimeouts)
}

// startHTTPWith is startHTTP with the given timeouts. An address without a
// host binds every interface: the log says so, since /metrics is then
// reachable from outside the host.
func startHTTPWith(addr string, maxConns int, handler http.Handler, log *slog.Logger, timeouts console.Timeouts) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on DELAYBRIDGE_HTTP_ADDR %q (in use by another process? choose another port): %w", addr, err)
	}
	ln = limitConns(ln, maxConns)
	srv := &http.Server{Handler: handler}
	// /metrics, /healthz and /readyz answer at once: a client that holds a
	// connection open (idle, or sending slowly) is cut off.
	timeouts.Apply(srv)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	if host, _, err := net.SplitHostPort(addr); err == nil && (host == "" || host == "0.0.0.0" || host == "::") {
		log.Info("http listening", "addr", ln.Addr().String(),
			"note", "every interface; set DELAYBRIDGE_HTTP_ADDR=127.0.0.1:8080 to serve this host only")
	} else {
		log.Info("http listening", "addr", ln.Addr().String())
	}
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
func newRegistry(b Build) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		b.info().collector(),
	)
	return reg
}

// routes serves only metrics and probes. dests and mem (nil: none) are the
// destination and Redis memory watches whose last results /readyz reports,
// as it reports the intakes' health, and accept (nil: none) the queue whose
// acceptance stops while too few replicas are connected.
func routes(reg *prometheus.Registry, rdb redis.UniversalClient, topics []forwarder.Topic, dests *destinationWatch, intakes []intakeRunner, mem *memoryWatch, accept *queue.Queue) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		// Every failing dependency, not the first: a Redis outage must not
		// hide refused broker credentials, which need another fix.
		err := errors.Join(ready(ctx, rdb, topics), mem.err(), dests.err(), intakesHealth(intakes), acceptanceErr(ctx, accept))
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	return mux
}

// ready reports whether Redis and every sink are reachable, joining every
// failure. A sink whose broker refused the credentials says so first: it is
// no outage that passes by itself.
func ready(ctx context.Context, rdb redis.UniversalClient, topics []forwarder.Topic) error {
	var errs []error
	if err := rdb.Ping(ctx).Err(); err != nil {
		errs = append(errs, fmt.Errorf("redis: %w", err))
	}
	for _, t := range topics {
		if p, ok := t.Sink.(interface{ Ping(context.Context) error }); ok {
			if err := p.Ping(ctx); errors.Is(err, sinks.ErrAuth) {
				errs = append(errs, fmt.Errorf("sink of topic %s: broker refused the credentials: %w", t.Name, err))
			} else if err != nil {
				errs = append(errs, fmt.Errorf("sink of topic %s: %w", t.Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// flowOf is every topic's flow control as configured.
func flowOf(cfg config.Config) map[string]forwarder.Flow {
	m := map[string]forwarder.Flow{}
	for _, t := range cfg.Topics {
		m[t.Name] = forwarder.Flow{RateLimit: t.RateLimit, HoldQueue: t.HoldQueue, HoldAbove: t.HoldAbove}
	}
	return m
}
