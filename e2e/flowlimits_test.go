package e2e

import (
	"bytes"
	"encoding/json"
	"maps"
	"os/exec"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
)

// statsLimits runs `delaybridge stats --json` from a shell with vars only
// (no flow-control variable) and returns the limits of its one topic.
func statsLimits(t *testing.T, vars map[string]string) (limits struct {
	Rate     float64 `json:"rate_limit"`
	Source   string  `json:"source"`
	Replicas []struct {
		Replica string  `json:"replica"`
		Rate    float64 `json:"rate_limit"`
	} `json:"replicas"`
	Groups []struct {
		Rate     float64  `json:"rate_limit"`
		Replicas []string `json:"replicas"`
	} `json:"groups"`
}) {
	t.Helper()
	cmd := exec.Command(binary, "stats", "--json")
	cmd.Env = e2etest.Env(vars)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("stats --json: %v\n%s", err, stderr.String())
	}
	var out struct {
		Topics []struct {
			Limits json.RawMessage `json:"limits"`
		} `json:"topics"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil || len(out.Topics) != 1 {
		t.Fatalf("stats --json: %v\n%s", err, stdout.String())
	}
	if err := json.Unmarshal(out.Topics[0].Limits, &limits); err != nil {
		t.Fatal(err)
	}
	return limits
}

// Daemons publish the limits they were started with: stats from a shell
// without them shows each replica's, and a replica killed with SIGKILL
// (no shutdown, no goodbye) drops out once its report's deadline, a
// heartbeat TTL, has passed.
func TestStatsShowsEachDaemonsLimitsAndForgetsAKilledOne(t *testing.T) {
	t.Parallel()
	name := e2etest.Unique(t)
	e2etest.ConnectRedis(t, name)
	mq := e2etest.NewRabbit(t, name, nil)
	shell := mq.TopicVars(name, topic, slots)
	shell["DELAYBRIDGE_REDIS_URL"] = e2etest.RedisURL()
	shell["DELAYBRIDGE_AMQP_URL"] = e2etest.AMQPURL()
	daemon := func(id, rate string) *e2etest.Daemon {
		vars := maps.Clone(shell)
		vars["DELAYBRIDGE_HEARTBEAT_INTERVAL"] = "200ms"
		vars["DELAYBRIDGE_HEARTBEAT_TTL"] = "1s"
		vars["DELAYBRIDGE_REPLICA_ID"] = id
		if rate != "" {
			vars["DELAYBRIDGE_TOPIC_ORDERS_RATE_LIMIT"] = rate
		}
		return startDaemon(t, vars)
	}
	a := daemon("a", "300")
	b := daemon("b", "40")
	c := daemon("c", "")
	e2etest.WaitFor(t, 10*time.Second, "a at 300/s, b at 40/s and c unlimited", func() bool {
		l := statsLimits(t, shell)
		return len(l.Replicas) == 3 && l.Replicas[0].Rate == 300 && l.Replicas[1].Rate == 40 && l.Replicas[2].Rate == 0 &&
			len(l.Groups) == 3 && l.Source == "environment"
	})
	b.Kill()
	killed := time.Now()
	e2etest.WaitFor(t, 5*time.Second, "b dropped out after its deadline", func() bool {
		l := statsLimits(t, shell)
		return len(l.Replicas) == 2 && l.Replicas[0].Replica == "a" && l.Replicas[1].Replica == "c"
	})
	if took := time.Since(killed); took < 500*time.Millisecond {
		t.Errorf("b dropped out %s after SIGKILL: before its deadline (a heartbeat TTL of 1 s, renewed every 500 ms)", took)
	}
	stop(t, c)
	if l := statsLimits(t, shell); len(l.Replicas) != 1 || l.Rate != 300 || len(l.Groups) != 1 {
		t.Errorf("after c stopped: %+v, want a's 300/s only", l)
	}
	stop(t, a)
	if l := statsLimits(t, shell); len(l.Replicas) != 0 || l.Rate != 0 || l.Source != "" {
		t.Errorf("with no daemon left and no limit in this shell: %+v, want none", l)
	}
}
