package main

import (
	"compress/gzip"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// otlpSink is an OTLP/HTTP trace endpoint of the bench's own: it reads
// every POST /v1/traces, counts the exports, their bytes and the spans in
// them, throws them away and answers 200, as a collector would. The tracing
// scenario points its daemons at it, so that tracing on costs the daemon
// what exporting to a collector costs, and checks that spans really arrived.
type otlpSink struct {
	srv  *http.Server
	addr string
	done chan struct{} // closed when Serve returned

	requests atomic.Int64 // POST /v1/traces answered 200
	bytes    atomic.Int64 // their bodies as sent (compressed when gzip)
	spans    atomic.Int64 // spans in them
	bad      atomic.Int64 // requests refused: wrong path or method, unreadable or undecodable body
}

// sinkCounts are an otlpSink's counters at one moment, or between two.
type sinkCounts struct {
	Requests, Bytes, Spans, Bad int64
}

func (c sinkCounts) minus(before sinkCounts) sinkCounts {
	return sinkCounts{Requests: c.Requests - before.Requests, Bytes: c.Bytes - before.Bytes, Spans: c.Spans - before.Spans, Bad: c.Bad - before.Bad}
}

// startOTLPSink serves the sink on a free port of 127.0.0.1 until close.
func startOTLPSink() (*otlpSink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen for OTLP: %w", err)
	}
	s := &otlpSink{addr: ln.Addr().String(), done: make(chan struct{})}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln) // ErrServerClosed once close is called
	}()
	return s, nil
}

// endpoint is the value of OTEL_EXPORTER_OTLP_ENDPOINT that reaches the
// sink (the exporter appends /v1/traces).
func (s *otlpSink) endpoint() string { return "http://" + s.addr }

func (s *otlpSink) counts() sinkCounts {
	return sinkCounts{Requests: s.requests.Load(), Bytes: s.bytes.Load(), Spans: s.spans.Load(), Bad: s.bad.Load()}
}

// close stops the sink and waits until it stopped serving.
func (s *otlpSink) close() {
	_ = s.srv.Close()
	<-s.done
}

// ServeHTTP counts an export before it answers, so that an exporter that
// got its answer (a daemon that flushed its spans and exited) has been
// counted.
func (s *otlpSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/traces" || r.Method != http.MethodPost {
		s.bad.Add(1)
		http.Error(w, "only POST /v1/traces", http.StatusNotFound)
		return
	}
	spans, size, err := readExport(r)
	if err != nil {
		s.bad.Add(1)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.requests.Add(1)
	s.bytes.Add(size)
	s.spans.Add(int64(spans))
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK) // an empty ExportTraceServiceResponse: all accepted
}

// readExport reads an export's body, gunzipping it when it says so, and
// returns its spans and its size as sent.
func readExport(r *http.Request) (spans int, size int64, err error) {
	counted := &countingReader{r: r.Body}
	var body io.Reader = counted
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(counted)
		if err != nil {
			return 0, 0, fmt.Errorf("gzip body: %w", err)
		}
		defer zr.Close()
		body = zr
	}
	b, err := io.ReadAll(body)
	if err != nil {
		return 0, 0, fmt.Errorf("read body: %w", err)
	}
	spans, err = countSpans(b)
	if err != nil {
		return 0, 0, fmt.Errorf("decode ExportTraceServiceRequest: %w", err)
	}
	return spans, counted.n, nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// countSpans counts the spans of an OTLP ExportTraceServiceRequest in wire
// format without decoding them: resource_spans (1) → scope_spans (2) →
// spans (2).
func countSpans(b []byte) (int, error) {
	n := 0
	err := eachField(b, 1, func(rs []byte) error {
		return eachField(rs, 2, func(ss []byte) error {
			return eachField(ss, 2, func([]byte) error { n++; return nil })
		})
	})
	return n, err
}

// eachField calls f with the bytes of every length-delimited field num of
// the message b, skipping the other fields.
func eachField(b []byte, num protowire.Number, f func([]byte) error) error {
	for len(b) > 0 {
		got, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return protowire.ParseError(l)
		}
		b = b[l:]
		if got == num && typ == protowire.BytesType {
			v, l := protowire.ConsumeBytes(b)
			if l < 0 {
				return protowire.ParseError(l)
			}
			if err := f(v); err != nil {
				return err
			}
			b = b[l:]
			continue
		}
		if l = protowire.ConsumeFieldValue(got, typ, b); l < 0 {
			return protowire.ParseError(l)
		}
		b = b[l:]
	}
	return nil
}
