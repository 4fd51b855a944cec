package api

import (
	"bufio"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/queue"
)

func TestRequestsAreCountedByRouteAndStatus(t *testing.T) {
	f := newFixture(t)
	f.want(f.do("POST", "/v1/topics/orders/messages", fullToken, `{"id":"a","body":"x","delay":"1h"}`), 201, "")
	f.want(f.do("POST", "/v1/topics/orders/messages", fullToken, `{"id":"a","body":"x","delay":"1h"}`), 200, "")
	f.want(f.do("POST", "/v1/topics/orders/messages", "", `{}`), 401, "")
	f.want(f.do("GET", "/v1/topics/orders/messages/zzz", fullToken, ""), 404, "")
	f.want(f.do("GET", "/nowhere", fullToken, ""), 404, "")
	for _, c := range []struct {
		route, status string
		want          float64
	}{{routeSchedule, "201", 1}, {routeSchedule, "200", 1}, {routeSchedule, "401", 1}, {routeGet, "404", 1}, {"unmatched", "404", 1}} {
		if got := testutil.ToFloat64(f.metrics.Requests.WithLabelValues(c.route, c.status)); got != c.want {
			t.Errorf("requests{route=%q,status=%s} = %v, want %v", c.route, c.status, got, c.want)
		}
	}
	if n := testutil.CollectAndCount(f.metrics.Duration); n != len(Routes())+1 {
		t.Errorf("%d latency series, want one per route and unmatched", n)
	}
}

// TestLogsNeverHoldBodiesOrTokens makes every request fail in ways that are
// logged (Redis unreachable) and checks the log holds neither the body nor
// the token.
func TestLogsNeverHoldBodiesOrTokens(t *testing.T) {
	const token, body = "secret-token-not-for-logs-42", "SECRET-BODY-not-for-logs"
	logs := &syncBuffer{}
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: time.Second})
	defer rdb.Close()
	srv, err := New(Options{Queue: queue.New(rdb), Tokens: []Token{{Secret: token}},
		Log: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, base: "http://" + serve(t, srv, nil), client: &http.Client{Timeout: 20 * time.Second}}
	defer f.client.CloseIdleConnections()
	f.want(f.do("POST", "/v1/topics/orders/messages", token, `{"id":"`+body+`","body":"`+body+`"}`), 503, "unavailable")
	f.want(f.do("GET", "/v1/topics", token, ""), 503, "unavailable")
	f.want(f.do("POST", "/v1/topics/orders/messages", "wrong-"+token, `{"body":"`+body+`"}`), 401, "")
	f.want(f.do("POST", "/v1/topics/orders/messages", token, `{"body":"`+body+`"`), 503, "unavailable")
	log := logs.String()
	if !strings.Contains(log, "api request failed") {
		t.Fatalf("the failures were not logged: %s", log)
	}
	if strings.Contains(log, body) || strings.Contains(log, token) {
		t.Errorf("the log holds a body or a token:\n%s", log)
	}
}

// TestSlowClientsAreCutOff: a client that sends its header or its body too
// slowly loses its connection.
func TestSlowClientsAreCutOff(t *testing.T) {
	rdb, prefix := redisAndPrefix(t)
	srv, err := New(Options{Queue: queue.New(rdb), Prefix: prefix, Tokens: []Token{{Secret: fullToken}}, Metrics: NewMetrics(prometheus.NewRegistry())})
	if err != nil {
		t.Fatal(err)
	}
	srv.limits = limits{readHeader: 300 * time.Millisecond, read: time.Second, write: time.Second, idle: time.Second}
	addr := serve(t, srv, nil)
	for _, tt := range []struct {
		name, send string
		within     time.Duration
	}{
		{"header never ends", "POST /v1/topics/orders/messages HTTP/1.1\r\nHost: x\r\n", 300 * time.Millisecond},
		{"body never comes", fmt.Sprintf("POST /v1/topics/orders/messages HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"+
			"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{", fullToken), time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			start := time.Now()
			if _, err := conn.Write([]byte(tt.send)); err != nil {
				t.Fatal(err)
			}
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			_, _ = bufio.NewReader(conn).ReadString(0) // until the server closes
			if d := time.Since(start); d < tt.within || d > tt.within+5*time.Second {
				t.Errorf("connection closed after %s, want about %s", d, tt.within)
			}
		})
	}
}
