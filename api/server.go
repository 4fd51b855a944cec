package api

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/delaybridge/delaybridge/queue"
)

// Options configure a Server.
type Options struct {
	Queue *queue.Queue
	// Prefix is the key prefix (DELAYBRIDGE_KEY_PREFIX): topics are looked up
	// in its registry.
	Prefix string
	// Tokens are the bearer tokens accepted; none refuses every request
	// unless Insecure is set.
	Tokens []Token
	// Insecure serves every request without a token (on purpose: see
	// DELAYBRIDGE_API_INSECURE).
	Insecure bool
	// MaxBody is the largest body each sink takes ("amqp", "kafka",
	// "redis": a registered layout's Sink), in bytes; a larger body is
	// refused with 413. A sink not listed (or 0) has no limit here.
	MaxBody map[string]int
	// MaxMessageSize is the largest body a topic accepts, in bytes
	// (DELAYBRIDGE_MAX_MESSAGE_SIZE and the topic's own): a larger one is
	// refused with 413, alone or in a batch. nil or 0: no limit here.
	MaxMessageSize func(topic string) int
	// MaxRequest bounds a request body in bytes; 0 means DefaultMaxRequest.
	MaxRequest int64
	// MaxRequestMemory bounds the bodies of the requests being served (and
	// the messages of the GETs being answered) together, in bytes
	// (DELAYBRIDGE_API_MAX_REQUEST_MEMORY); one that does not fit within a
	// few seconds is answered 503 with Retry-After. 0 means
	// DefaultMaxRequestMemory.
	MaxRequestMemory int64
	// RoutingKeys are the path.Match patterns a message's own routing_key
	// must match in a topic ("*" alone: any key), whatever the token
	// (DELAYBRIDGE_TOPIC_<NAME>_ROUTING_KEYS). None, or nil RoutingKeys:
	// an AMQP topic (or one of unknown sink) refuses every routing_key with
	// 403, a Kafka or Redis topic takes any (see routingKeyAllowed).
	RoutingKeys func(topic string) []string
	// Metrics are where requests are counted; nil counts nowhere.
	Metrics *Metrics
	Log     *slog.Logger
	// Tracer starts a server span per request (see trace.go); nil: none,
	// though a request's traceparent is still stored with what it schedules.
	Tracer trace.Tracer
}

// DefaultMaxRequest is Options.MaxRequest's default: 16 MiB.
const DefaultMaxRequest = 16 << 20

// limits guard the server against slow or stuck clients.
type limits struct {
	readHeader, read, write, idle time.Duration
}

// defaultLimits: a header within 5 s, a whole request (a batch of 16 MiB
// over a slow link included) within 30 s.
func defaultLimits() limits {
	return limits{readHeader: 5 * time.Second, read: 30 * time.Second, write: 30 * time.Second, idle: 2 * time.Minute}
}

const (
	// redisTimeout bounds the Redis calls of one request.
	redisTimeout = 10 * time.Second
	// shutdownTimeout is how long requests in progress may finish.
	shutdownTimeout = 5 * time.Second
)

// Server is the API's HTTP handler.
type Server struct {
	opts    Options
	limits  limits
	auth    *authenticator
	handler http.Handler
	batches chan struct{} // one per batch request being served
	bodies  *bodyMemory   // the memory request bodies may hold at once
	fwd     forwarding
}

// New builds a Server. Without tokens it refuses to build unless Insecure
// is set: an open API lets anyone who reaches it schedule and cancel.
func New(opts Options) (*Server, error) {
	if opts.Queue == nil {
		return nil, errors.New("api: no queue")
	}
	if len(opts.Tokens) == 0 && !opts.Insecure {
		return nil, errors.New("api: no token, and not insecure on purpose")
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.MaxRequest <= 0 {
		opts.MaxRequest = DefaultMaxRequest
	}
	if opts.MaxRequestMemory <= 0 {
		opts.MaxRequestMemory = DefaultMaxRequestMemory
	}
	if opts.Prefix == "" {
		opts.Prefix = queue.DefaultPrefix
	}
	s := &Server{opts: opts, limits: defaultLimits(), auth: newAuthenticator(opts.Tokens, opts.Insecure),
		batches: make(chan struct{}, maxBatchRequests), bodies: newBodyMemory(opts.MaxRequestMemory)}
	s.handler = s.routes()
	return s, nil
}

// ServeHTTP serves the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// Serve serves the API on ln until ctx ends (over TLS when tlsCfg is not
// nil), then lets requests in progress finish for a few seconds.
func (s *Server) Serve(ctx context.Context, ln net.Listener, tlsCfg *tls.Config) error {
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: s.limits.readHeader,
		ReadTimeout:       s.limits.read,
		WriteTimeout:      s.limits.write,
		IdleTimeout:       s.limits.idle,
		MaxHeaderBytes:    64 << 10,
		TLSConfig:         tlsCfg,
		// net/http's own messages (TLS handshakes, bad requests) never
		// hold a body or a header value.
		ErrorLog: slog.NewLogLogger(s.opts.Log.Handler(), slog.LevelWarn),
	}
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	err := srv.Serve(ln)
	cancel()
	<-done
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return fmt.Errorf("serve api: %w", err)
}

// Routes, by ServeMux pattern; the OpenAPI document describes each one (a
// test keeps them in step).
const (
	routeSchedule   = "POST /v1/topics/{topic}/messages"
	routeBatch      = "POST /v1/topics/{topic}/messages:batch"
	routeGet        = "GET /v1/topics/{topic}/messages/{id}"
	routeReschedule = "PATCH /v1/topics/{topic}/messages/{id}"
	routeCancel     = "DELETE /v1/topics/{topic}/messages/{id}"
	routeTopics     = "GET /v1/topics"
	routeOpenAPI    = "GET /v1/openapi.json"
)

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.Handle(routeSchedule, s.topicRoute(s.withBudget(s.schedule)))
	mux.Handle(routeBatch, s.topicRoute(s.withBudget(s.scheduleBatch)))
	mux.Handle(routeGet, s.topicRoute(s.get))
	mux.Handle(routeReschedule, s.topicRoute(s.withBudget(s.reschedule)))
	mux.Handle(routeCancel, s.topicRoute(s.cancel))
	mux.Handle(routeTopics, s.authorized(s.topics))
	mux.HandleFunc(routeOpenAPI, serveOpenAPI)
	return s.observe(mux)
}

// Routes are the patterns the API serves.
func Routes() []string {
	return []string{routeSchedule, routeBatch, routeGet, routeReschedule, routeCancel, routeTopics, routeOpenAPI}
}
