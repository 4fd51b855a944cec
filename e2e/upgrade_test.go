package e2e

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
)

// release010 is the commit delaybridge 0.1.0 was released from. The
// repository has no tags: it is the commit that wrote CHANGELOG.md's
// "## [0.1.0] - 2026-11-23" section as released ("CHANGELOG: 0.1.0 is
// everything that exists, …", found with `git log -- CHANGELOG.md`). The
// next commit to change CHANGELOG.md added the first entries under
// Unreleased (claims looking ahead), and the 0.1.0 section has not changed
// since.
const release010 = "371c34b055d084abcd9c9a82344e6200ffd273f2"

// TestRollingUpgradeFrom010AndDowngradeLoseNothing runs the real 0.1.0
// daemon (built from the repository's history) and this build on one raw
// topic with messages falling due over 25 s, the way a rolling upgrade and
// a rollback run them: 0.1.0 alone, this build beside it, 0.1.0 stopped
// (SIGTERM), 0.1.0 started again beside this build, this build stopped,
// 0.1.0 alone until the end. Messages are written in three groups (before
// the first start, after this build joined, after 0.1.0 came back), so each
// version reads what the other's era wrote. No process is killed: nothing
// may be lost, early or delivered twice, and each replica must have
// published some.
func TestRollingUpgradeFrom010AndDowngradeLoseNothing(t *testing.T) {
	t.Parallel()
	old := e2etest.BuildRelease(t, release010)
	began := time.Now()

	name := e2etest.Unique(t)
	rdb := e2etest.ConnectRedis(t, name)
	mq := e2etest.NewRabbit(t, name, nil)
	mq.Consume(t)
	const n = 3000
	plan := e2etest.NewPlan(n, time.Now().Add(2*time.Second), 25*time.Second)
	plan.Cancelled = map[int]bool{}
	key := e2etest.ProducerKey(name, topic, slots)
	write := func(group int) {
		t.Helper()
		var numbers []int
		for i := group; i < n; i += 3 {
			numbers = append(numbers, i)
		}
		if err := plan.Write(context.Background(), rdb, key, e2etest.RawMember, numbers); err != nil {
			t.Fatal(err)
		}
	}
	vars := mq.TopicVars(name, topic, slots)
	vars["DELAYBRIDGE_HEARTBEAT_INTERVAL"] = "200ms"
	vars["DELAYBRIDGE_HEARTBEAT_TTL"] = "1s"
	start := func(bin, replica string) *e2etest.Daemon {
		t.Helper()
		all := map[string]string{
			"DELAYBRIDGE_REDIS_URL":  e2etest.RedisURL(),
			"DELAYBRIDGE_AMQP_URL":   e2etest.AMQPURL(),
			"DELAYBRIDGE_REPLICA_ID": name + "-" + replica,
		}
		maps.Copy(all, vars)
		return e2etest.Start(t, bin, all)
	}
	published := map[string]float64{}
	stopCounting := func(d *e2etest.Daemon, replica string) {
		t.Helper()
		v, _, err := e2etest.Metric(context.Background(), d.Addr(), "delaybridge_published_total", "topic="+topic)
		if err != nil {
			t.Errorf("%s: /metrics: %v", replica, err)
		}
		published[replica] = v
		stop(t, d)
		t.Logf("%6.1f s: %s stopped (SIGTERM) after publishing %.0f", time.Since(began).Seconds(), replica, v)
	}

	write(0)
	a := start(old, "0.1.0-a")
	t.Logf("%6.1f s: 0.1.0-a serves", time.Since(began).Seconds())
	time.Sleep(4 * time.Second)
	b := start(binary, "new")
	t.Logf("%6.1f s: new serves beside it", time.Since(began).Seconds())
	write(1)
	time.Sleep(3 * time.Second)
	stopCounting(a, "0.1.0-a")
	time.Sleep(3 * time.Second)
	a2 := start(old, "0.1.0-b")
	t.Logf("%6.1f s: 0.1.0-b serves beside new", time.Since(began).Seconds())
	write(2)
	time.Sleep(3 * time.Second)
	stopCounting(b, "new")
	left := n - mq.Distinct()
	t.Logf("%6.1f s: %d messages not yet delivered when the downgrade was complete", time.Since(began).Seconds(), left)

	e2etest.WaitFor(t, 60*time.Second, fmt.Sprintf("%d deliveries", n), func() bool { return mq.Distinct() >= n })
	time.Sleep(1500 * time.Millisecond) // would-be duplicates have time to show
	stopCounting(a2, "0.1.0-b")

	o := plan.Count(mq.Deliveries(), nil)
	o.Check(t)
	logLateness(t, plan, o, began)
	if o.Duplicates != 0 {
		t.Errorf("%d duplicates without any kill", o.Duplicates)
	}
	for _, replica := range []string{"0.1.0-a", "new"} {
		if published[replica] == 0 {
			t.Errorf("replica %s published nothing: the versions did not share the topic", replica)
		}
	}
	if left == 0 {
		t.Errorf("every message was delivered before 0.1.0 ran alone again: the downgrade forwarded nothing (a machine too slow for the 25 s plan)")
	} else if published["0.1.0-b"] == 0 {
		t.Errorf("0.1.0, started again, published nothing of the %d messages left", left)
	}
	for replica, d := range map[string]*e2etest.Daemon{"0.1.0-a": a, "new": b, "0.1.0-b": a2} {
		for _, r := range d.Records("ownership changed") {
			t.Logf("%s: %s", replica, strings.TrimSpace(string(r)))
		}
		if errs := errorLines(d.Log()); len(errs) > 0 {
			t.Errorf("%s logged at ERROR:\n%s", replica, strings.Join(errs, ""))
		}
	}
	expectEmpty(t, rdb, name)
	t.Logf("upgrade and downgrade took %s after the build", time.Since(began).Round(100*time.Millisecond))
}

// errorLines are the JSON log lines at level ERROR.
func errorLines(log string) []string {
	var out []string
	for line := range strings.Lines(log) {
		if strings.Contains(line, `"level":"ERROR"`) {
			out = append(out, line)
		}
	}
	return out
}

// logLateness logs, per second of due time since began, how many messages
// arrived more than a second late and the worst of them: where in the
// rollout a slot went unserved.
func logLateness(t *testing.T, plan *e2etest.Plan, o e2etest.Outcome, began time.Time) {
	t.Helper()
	late := map[int]int{}
	worst := map[int]time.Duration{}
	for i, first := range o.First {
		if d := first.Sub(plan.Due[i]); !first.IsZero() && d > time.Second {
			s := int(plan.Due[i].Sub(began).Seconds())
			late[s]++
			worst[s] = max(worst[s], d)
		}
	}
	for s := range 40 {
		if late[s] > 0 {
			t.Logf("due at %2d s: %4d messages over 1 s late, worst %s", s, late[s], worst[s].Round(10*time.Millisecond))
		}
	}
}
