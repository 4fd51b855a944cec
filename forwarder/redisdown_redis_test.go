package forwarder

import (
	"bufio"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/internal/testing/redistest"
	"github.com/delaybridge/delaybridge/queue"
)

// TestRedisOutageLogsOncePerKindThenOneErrorThenRecovery: with Redis cut
// off (a fault proxy refusing every connection: the daemon sees what a
// stopped redis-server gives it) for 2.5 s, with heartbeats every 50 ms
// and four slots claiming, the log gets one WARN per kind of failure (the
// rest wait for logrepeat's interval), one ERROR once the outage has
// lasted redisDownAfter, and one INFO "redis reachable again" when Redis
// answers again. Before, every failed heartbeat and every slot's claim
// wrote its own WARN (46 lines in 16 s), and nothing said it lasted or
// ended.
func TestRedisOutageLogsOncePerKindThenOneErrorThenRecovery(t *testing.T) {
	t.Parallel()
	proxy, rdb := proxiedRedis(t, func(o *redis.Options) { o.MaxRetries = -1; o.DialTimeout = 200 * time.Millisecond })
	q := queue.New(rdb)
	prefix := redistest.Prefix(t, rdb)
	var logs lockedBuffer
	log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	topic := queue.Topic{Name: "orders", Prefix: prefix, Slots: 4}
	start(t, Options{Queue: q, KeyPrefix: prefix, ReplicaID: "r1", Topics: []Topic{{Topic: topic, Sink: newRecordSink()}},
		Log: log, HeartbeatInterval: 50 * time.Millisecond, PollInterval: 20 * time.Millisecond,
		BacklogInterval: 100 * time.Millisecond, redisDownAfter: time.Second})
	eventually(t, 10*time.Second, "ownership", func() bool { return strings.Contains(logs.String(), "ownership changed") })
	proxy.Cut()
	time.Sleep(2500 * time.Millisecond)
	during := logs.String()
	proxy.Restore()
	eventually(t, 10*time.Second, "the recovery line", func() bool { return strings.Contains(logs.String(), "redis reachable again") })
	time.Sleep(300 * time.Millisecond)

	warns, errs, back := 0, 0, 0
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	for sc.Scan() {
		var l struct{ Level, Msg string }
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		switch {
		case l.Level == "WARN":
			warns++
		case l.Level == "ERROR" && strings.HasPrefix(l.Msg, "redis unreachable"):
			errs++
		case l.Level == "ERROR":
			t.Errorf("unexpected ERROR %s", sc.Text())
		case l.Msg == "redis reachable again":
			back++
		}
	}
	if warns == 0 || warns > 6 {
		t.Errorf("%d WARN lines over a 2.5 s outage, want 1 to 6 (one per kind):\n%s", warns, during)
	}
	if errs != 1 || back != 1 {
		t.Errorf("%d \"redis unreachable\" ERROR and %d \"redis reachable again\" lines, want 1 and 1:\n%s", errs, back, logs.String())
	}
}
