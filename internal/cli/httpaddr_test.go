package cli

import (
	"context"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"
)

// TestPortInUseExitsNamingTheVariable: a second daemon on the same port
// exited with "listen on :8080: bind: address already in use", naming no
// setting to change.
func TestPortInUseExitsNamingTheVariable(t *testing.T) {
	exchange := uniqueName("dbtest.port.")
	amqpTopicEnv(t, exchange)
	declareBound(t, exchange)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	t.Setenv("DELAYBRIDGE_HTTP_ADDR", taken.Addr().String())
	t.Setenv("DELAYBRIDGE_LOG_FORMAT", "json")
	logs := &syncBuffer{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code := dispatch(ctx, []string{"run"}, stdio{in: strings.NewReader(""), out: io.Discard, err: logs})
	if code == exitOK || ctx.Err() != nil || !strings.Contains(logs.String(), `listen on DELAYBRIDGE_HTTP_ADDR \"`+taken.Addr().String()) {
		t.Errorf("daemon on a port in use: exit %d (%v), want a failure naming DELAYBRIDGE_HTTP_ADDR; logs:\n%s", code, ctx.Err(), logs.String())
	}
}

// TestListeningOnEveryInterfaceIsSaid: the default ":8080" serves /metrics
// to the network; the start-up log says so and how to narrow it.
func TestListeningOnEveryInterfaceIsSaid(t *testing.T) {
	logs := &syncBuffer{}
	stop, err := startHTTP(":0", 1024, nil, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if !strings.Contains(logs.String(), "every interface") {
		t.Errorf("log of a listener on every interface: %s", logs.String())
	}
}
