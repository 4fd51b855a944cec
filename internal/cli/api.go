package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/trace"

	"github.com/delaybridge/delaybridge/api"
	"github.com/delaybridge/delaybridge/config"
	"github.com/delaybridge/delaybridge/queue"
	"github.com/delaybridge/delaybridge/sinks/kafka"
)

const apiUsage = `usage: delaybridge api

Serves the HTTP API for producers alone (a Deployment that scales with the
producers): schedule, get, reschedule and cancel messages by id, in JSON,
behind the bearer tokens of DELAYBRIDGE_API_TOKENS. It listens on
DELAYBRIDGE_API_ADDR (default :8090) and serves /metrics, /healthz and
/readyz on DELAYBRIDGE_HTTP_ADDR. Topics are those the daemon registered in
Redis. ` + "`delaybridge run`" + ` serves the same API when DELAYBRIDGE_API_ADDR is set.

Examples:
  DELAYBRIDGE_API_TOKENS_FILE=/run/secrets/api-tokens delaybridge api
`

// runAPI is `delaybridge api`.
func runAPI(ctx context.Context, args []string, s stdio) int {
	c, code := openServer("api", apiUsage, args, s)
	if c == nil {
		return code
	}
	defer c.close()
	if err := c.cfg.API.Check(); err != nil {
		fmt.Fprintf(s.err, "delaybridge api: bad configuration:\n  %v\n", err)
		return exitConfig
	}
	if c.cfg.API.Addr == "" {
		c.cfg.API.Addr = config.DefaultAPIAddr
	}
	log := newLogger(c.cfg, s)
	tr, code := setupTracing(ctx, s, log)
	if code != exitOK {
		return code
	}
	defer shutdownTracing(tr, log)
	reg := newRegistry(s.build)
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		rctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := c.rdb.Ping(rctx).Err(); err != nil {
			http.Error(w, "redis: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		if err := acceptanceErr(rctx, c.q); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	stopHTTP, err := startHTTP(c.cfg.HTTPAddr, c.cfg.HTTPMaxConns, mux, log)
	if err != nil {
		return c.fail(err)
	}
	defer stopHTTP()
	stop, err := startAPI(ctx, c.cfg, c.q, reg, log, tracer(tr.Provider, s.build))
	if err != nil {
		return c.fail(err)
	}
	<-ctx.Done()
	stop()
	return exitOK
}

// startHTTPAndAPI is startHTTP for the daemon's routes and, when
// DELAYBRIDGE_API_ADDR is set, startAPI; stop ends both.
func startHTTPAndAPI(ctx context.Context, cfg config.Config, routes http.Handler, q *queue.Queue, reg prometheus.Registerer, log *slog.Logger, tracer trace.Tracer) (stop func(), err error) {
	stopHTTP, err := startHTTP(cfg.HTTPAddr, cfg.HTTPMaxConns, routes, log)
	if err != nil {
		return nil, err
	}
	stopAPI, err := startAPI(ctx, cfg, q, reg, log, tracer)
	if err != nil {
		stopHTTP()
		return nil, err
	}
	return func() {
		stopAPI()
		stopHTTP()
	}, nil
}

// startAPI serves the HTTP API on cfg.API.Addr until stop is called; with
// no address it serves nothing.
func startAPI(ctx context.Context, cfg config.Config, q *queue.Queue, reg prometheus.Registerer, log *slog.Logger, tracer trace.Tracer) (stop func(), err error) {
	if cfg.API.Addr == "" {
		return func() {}, nil
	}
	tokens := make([]api.Token, len(cfg.API.Tokens))
	for i, t := range cfg.API.Tokens {
		tokens[i] = api.Token{Secret: t.Token, Topics: t.Topics}
	}
	srv, err := api.New(api.Options{Queue: durableQueue(q, cfg, reg, "api"), Prefix: cfg.KeyPrefix, Tokens: tokens, Insecure: cfg.API.Insecure,
		MaxBody: map[string]int{
			"amqp":  int(cfg.AMQP.MaxMessageSize),
			"redis": cfg.RedisSink.MaxMessageSize,
			"kafka": kafka.DefaultMaxMessageSize, // the Kafka sink's, as the daemon builds it
		},
		MaxRequest: cfg.API.MaxRequestSize, MaxRequestMemory: cfg.API.MaxRequestMemory, RoutingKeys: cfg.API.RoutingKeysOf, MaxMessageSize: cfg.MessageSize.Of,
		Metrics: api.NewMetrics(reg), Log: log, Tracer: tracer})
	if err != nil {
		return nil, err
	}
	var tlsCfg *tls.Config
	if cfg.API.TLS.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(cfg.API.TLS.CertFile, cfg.API.TLS.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("api certificate %s: %w", cfg.API.TLS.CertFile, err)
		}
		tlsCfg = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	ln, err := net.Listen("tcp", cfg.API.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", cfg.API.Addr, err)
	}
	ln = limitConns(ln, cfg.API.MaxConns)
	log.Info("api listening", "addr", ln.Addr().String(), "tls", tlsCfg != nil,
		"tokens", len(tokens), "insecure", cfg.API.Insecure && len(tokens) == 0)
	sctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := srv.Serve(sctx, ln, tlsCfg); err != nil && !errors.Is(err, context.Canceled) {
			log.Error("api stopped", "err", err)
		}
	})
	return func() {
		cancel()
		wg.Wait()
	}, nil
}
