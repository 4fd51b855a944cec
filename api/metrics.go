package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the API's Prometheus metrics. The route label is the route's
// pattern ("POST /v1/topics/{topic}/messages"), never a path with a topic
// or an id in it; "unmatched" counts requests no route served.
type Metrics struct {
	Requests *prometheus.CounterVec   // route, status
	Duration *prometheus.HistogramVec // route
}

// NewMetrics registers the API's metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "delaybridge_api_requests_total",
			Help: "HTTP API requests answered, by route and status.",
		}, []string{"route", "status"}),
		Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "delaybridge_api_request_duration_seconds",
			Help:    "Time to answer an HTTP API request, by route.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 10},
		}, []string{"route"}),
	}
	reg.MustRegister(m.Requests, m.Duration)
	for _, r := range Routes() {
		m.Duration.WithLabelValues(r)
	}
	return m
}

// statusWriter remembers the status a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// discard is a ResponseWriter that keeps only the status and headers: the
// mux's own 404 and 405 answers are plain text, ours are JSON.
type discard struct {
	header http.Header
	status int
}

func (d *discard) Header() http.Header { return d.header }
func (d *discard) Write(b []byte) (int, error) {
	if d.status == 0 {
		d.status = http.StatusOK
	}
	return len(b), nil
}
func (d *discard) WriteHeader(code int) { d.status = code }

// observe counts and times every request by route, and answers what no
// route serves in JSON.
func (s *Server) observe(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		h, pattern := mux.Handler(r)
		route := pattern
		r, span := s.startSpan(r, route)
		defer func() { endSpan(span, sw.status) }()
		if pattern == "" {
			route = "unmatched"
			d := &discard{header: http.Header{}}
			h.ServeHTTP(d, r)
			switch d.status {
			case http.StatusMethodNotAllowed:
				sw.Header().Set("Allow", d.header.Get("Allow"))
				writeError(sw, d.status, "method_not_allowed", r.Method+" is not allowed here; allowed: "+d.header.Get("Allow"))
			case http.StatusNotFound, 0:
				writeError(sw, http.StatusNotFound, "no_route", "no such route: see GET /v1/openapi.json")
			default: // a redirect to the cleaned path
				for k, v := range d.header {
					sw.Header()[k] = v
				}
				sw.WriteHeader(d.status)
			}
		} else {
			mux.ServeHTTP(sw, r)
		}
		if m := s.opts.Metrics; m != nil {
			m.Requests.WithLabelValues(route, strconv.Itoa(sw.status)).Inc()
			m.Duration.WithLabelValues(route).Observe(time.Since(start).Seconds())
		}
	})
}
