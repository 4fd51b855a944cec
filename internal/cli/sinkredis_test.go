package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
	"github.com/delaybridge/delaybridge/internal/testing/redistest"
	"github.com/delaybridge/delaybridge/queue"
	redissink "github.com/delaybridge/delaybridge/sinks/redis"
)

// The streams of SINK=redis topics may live on a Redis of their own given
// as the daemon's is: TLS with client certificates and an ACL user, a Redis
// Cluster, a Sentinel deployment. In each test the daemon's queue is on the
// shared test Redis and the stream on the other one, which gets every
// message byte for byte; a bad SINK_REDIS_ setting stops the daemon with
// exit 2 naming it.

func TestSinkRedisOverTLSWithAnACLUser(t *testing.T) {
	q, prefix := daemonEnv(t, "1")
	r := e2etest.StartTLSRedis(t, e2etest.NewPKI(t))
	const password = "streams-Hq27w"
	if err := r.Admin.Do(t.Context(), "ACL", "SETUSER", "streams", "on", ">"+password, "~*", "+@all").Err(); err != nil {
		t.Fatalf("create the sink's ACL user: %v", err)
	}
	pwFile := filepath.Join(t.TempDir(), "sink-redis-password")
	if err := os.WriteFile(pwFile, []byte(password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DELAYBRIDGE_SINK_REDIS_URL", "rediss://"+r.Addr+"/0")
	t.Setenv("DELAYBRIDGE_SINK_REDIS_USERNAME", "streams")
	t.Setenv("DELAYBRIDGE_SINK_REDIS_PASSWORD_FILE", pwFile)
	t.Setenv("DELAYBRIDGE_SINK_REDIS_CA_FILE", r.PKI.CA)
	t.Setenv("DELAYBRIDGE_SINK_REDIS_CERT_FILE", r.PKI.ClientCert)
	t.Setenv("DELAYBRIDGE_SINK_REDIS_KEY_FILE", r.PKI.ClientKey)

	out := checkSinkRedis(t, exitOK, "topic events (redis): ok")
	if strings.Contains(out, password) {
		t.Errorf("check shows the sink's password:\n%s", out)
	}
	deliverToSinkRedis(t, q, prefix, r.Admin)

	// A CA file that holds no certificate (here a key) is refused at start.
	t.Setenv("DELAYBRIDGE_SINK_REDIS_CA_FILE", r.PKI.ClientKey)
	checkSinkRedis(t, exitConfig, "DELAYBRIDGE_SINK_REDIS_CA_FILE")
}

func TestSinkRedisOnARedisCluster(t *testing.T) {
	q, prefix := daemonEnv(t, "1")
	rc := e2etest.ConnectRedisCluster(t, prefix)
	t.Setenv("DELAYBRIDGE_SINK_REDIS_ADDRS", strings.Join(e2etest.RedisClusterAddrs(), ","))
	t.Setenv("DELAYBRIDGE_SINK_REDIS_CLUSTER", "true")

	checkSinkRedis(t, exitOK, "topic events (redis): ok")
	deliverToSinkRedis(t, q, prefix, rc)

	// A cluster has only database 0.
	t.Setenv("DELAYBRIDGE_SINK_REDIS_URL", "redis://127.0.0.1:7101/1")
	checkSinkRedis(t, exitConfig, "DELAYBRIDGE_SINK_REDIS_URL")
}

func TestSinkRedisThroughSentinel(t *testing.T) {
	q, prefix := daemonEnv(t, "1")
	master := e2etest.StartRedisServer(t, "master", redis.Options{}, func(port int, dir string) []string {
		return []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "", "--appendonly", "no"}
	})
	const name, password = "streams", "sentinel-Wd83k"
	sentinel := e2etest.StartSentinel(t, name, master.Addr, password)
	// No SINK_REDIS_URL: the sink finds the master through the sentinel.
	t.Setenv("DELAYBRIDGE_SINK_REDIS_ADDRS", sentinel.Addr)
	t.Setenv("DELAYBRIDGE_SINK_REDIS_SENTINEL_MASTER", name)
	t.Setenv("DELAYBRIDGE_SINK_REDIS_SENTINEL_PASSWORD", password)

	checkSinkRedis(t, exitOK, "topic events (redis): ok")
	mc := redis.NewClient(&redis.Options{Addr: master.Addr})
	t.Cleanup(func() { _ = mc.Close() })
	deliverToSinkRedis(t, q, prefix, mc)

	// Sentinel needs the sentinels' addresses.
	t.Setenv("DELAYBRIDGE_SINK_REDIS_ADDRS", "")
	t.Setenv("DELAYBRIDGE_SINK_REDIS_URL", "redis://"+master.Addr+"/0")
	checkSinkRedis(t, exitConfig, "DELAYBRIDGE_SINK_REDIS_ADDRS")
}

// checkSinkRedis runs `delaybridge check` and fails the test unless it exits
// with code and its output says want; it returns the output.
func checkSinkRedis(t *testing.T, code int, want string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got, stdout, stderr := runCmd(ctx, "", "check")
	out := stdout + stderr
	if got != code || !strings.Contains(out, want) {
		t.Fatalf("check: exit %d, want %d saying %q\n%s", got, code, want, out)
	}
	return out
}

// sinkRedisBodies are raw members a stream must hold byte for byte: text,
// a 0 byte, bytes that are not UTF-8, a body of 64 KiB.
func sinkRedisBodies() [][]byte {
	return [][]byte{
		[]byte(`{"order":42,"event":"payment-timeout"}`),
		[]byte("a\x00b"),
		{0xff, 0xfe, 0x00, 0x80, '\n'},
		bytes.Repeat([]byte("0123456789abcdef"), 4096),
	}
}

// deliverToSinkRedis schedules sinkRedisBodies, due now, on the topic
// "events" that daemonEnv configured, runs the daemon until the stream on
// sink (the sink's own Redis) holds one entry each, and checks their bodies
// byte for byte and that the daemon's Redis holds no such stream.
func deliverToSinkRedis(t *testing.T, q *queue.Queue, prefix string, sink redis.UniversalClient) {
	t.Helper()
	ctx := t.Context()
	topic := queue.Topic{Name: "events", Prefix: prefix, Slots: 1}
	want := sinkRedisBodies()
	for _, b := range want {
		if _, err := q.ScheduleMember(ctx, topic, b, queue.In(0)); err != nil {
			t.Fatalf("schedule %q: %v", b[:min(len(b), 16)], err)
		}
	}
	d := startDaemon(t)
	stream := prefix + ":stream"
	var entries []redis.XMessage
	e2etest.WaitFor(t, 20*time.Second, "every message in the stream on the sink's Redis", func() bool {
		var err error
		entries, err = sink.XRange(ctx, stream, "-", "+").Result()
		return err == nil && len(entries) >= len(want)
	})
	if code := d.stop(30 * time.Second); code != exitOK {
		t.Errorf("daemon exit %d after SIGTERM; logs:\n%s", code, d.logs.String())
	}
	var got [][]byte
	for _, e := range entries {
		body, _ := e.Values[redissink.FieldBody].(string)
		got = append(got, []byte(body))
	}
	sortBytes(want)
	sortBytes(got)
	if !slices.EqualFunc(want, got, bytes.Equal) {
		t.Errorf("the stream holds %d bodies that differ from the %d scheduled", len(got), len(want))
	}
	if n, err := redistest.Connect(t).Exists(ctx, stream).Result(); err != nil || n != 0 {
		t.Errorf("EXISTS %s on the daemon's Redis = %d, %v: the stream belongs on the sink's", stream, n, err)
	}
}

func sortBytes(b [][]byte) { slices.SortFunc(b, bytes.Compare) }
