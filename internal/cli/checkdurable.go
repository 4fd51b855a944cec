package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/config"
	"github.com/delaybridge/delaybridge/queue"
	"github.com/delaybridge/delaybridge/redisclient"
)

// checkDurability prints what an acknowledged schedule survives: the
// master's role, its replicas in step and their lag, min-replicas-to-write,
// appendonly/appendfsync and save, against DELAYBRIDGE_REDIS_WAIT_*. It
// fails when WAIT_REPLICAS asks for more replicas than are in step (every
// acceptance would be refused) or WAIT_AOF for a server without WAITAOF,
// and warns when Redis persists nothing. On a Cluster it reads the node
// the client reaches, not every master.
func checkDurability(ctx context.Context, cfg config.Config) (checkLine, []string) {
	l := checkLine{Name: "redis durability"}
	rdb, err := redisclient.New(cfg.Redis)
	if err != nil {
		l.Error = err.Error()
		return l, nil
	}
	defer rdb.Close()
	info, err := rdb.Info(ctx, "replication").Result()
	switch {
	case err != nil && redisUnreachable(err):
		// Not "ok": nothing is known while Redis does not answer (the
		// redis line above fails with the reason).
		l.Error = "unknown: Redis does not answer"
		return l, nil
	case err != nil:
		// An answer, such as a user not granted INFO: the posture is
		// unknown, and that is no failure.
		l.OK, l.Note = true, fmt.Sprintf("posture unknown (%v)", err)
		return l, nil
	}
	inStep := queue.CountReplicas(info, queue.ReplicaMaxLag)
	conf := configValues(ctx, rdb, "min-replicas-to-write", "appendonly", "appendfsync", "save")
	l.Note = fmt.Sprintf("role %s, %d replica(s) in step of %s connected%s, min-replicas-to-write %s, appendonly %s, appendfsync %s, save %q; acknowledges after %s",
		field(info, "role"), inStep, field(info, "connected_slaves"), replicaLags(info), conf["min-replicas-to-write"],
		conf["appendonly"], conf["appendfsync"], conf["save"], waitNote(cfg.RedisWait))
	var warnings []string
	if conf["appendonly"] == "no" && conf["save"] == "" {
		warnings = append(warnings, "Redis persists nothing (appendonly no, save \"\"): a restart of it loses every scheduled message; see docs/operations.md")
	}
	switch {
	case cfg.RedisWait.Replicas > inStep:
		l.Error = fmt.Sprintf("%s_REDIS_WAIT_REPLICAS=%d but %d replica(s) are in step (lag ≤ %ds): every schedule would be refused; %s",
			config.Prefix, cfg.RedisWait.Replicas, inStep, queue.ReplicaMaxLag, l.Note)
	default:
		if err := queue.New(rdb).WithDurability(cfg.RedisWait.Durability()).CheckDurability(ctx); err != nil {
			l.Error = fmt.Sprintf("%s_REDIS_WAIT_AOF=true: %v", config.Prefix, err)
		} else {
			l.OK = true
		}
	}
	return l, warnings
}

// waitNote says what an acknowledgement waits for.
func waitNote(w config.RedisWait) string {
	var parts []string
	if w.Replicas > 0 {
		parts = append(parts, fmt.Sprintf("WAIT %d (%s)", w.Replicas, w.Timeout))
	}
	if w.AOF {
		parts = append(parts, fmt.Sprintf("WAITAOF 1 0 (%s)", w.Timeout))
	}
	if len(parts) == 0 {
		return "the master's reply alone (a failover may lose what it had not replicated)"
	}
	return strings.Join(parts, " and ")
}

// replicaLags lists each replica's address and lag, " (ip:port lag Ns, …)".
func replicaLags(info string) string {
	var out []string
	for _, r := range queue.ReplicaLinks(info) {
		out = append(out, fmt.Sprintf("%s:%s %s lag %ss", r.IP, r.Port, r.State, r.Lag))
	}
	if len(out) == 0 {
		return ""
	}
	return " (" + strings.Join(out, ", ") + ")"
}

// field is name's value in an INFO reply, "?" when absent.
func field(info, name string) string {
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && k == name {
			return v
		}
	}
	return "?"
}

// configValues reads CONFIG GET of each name; "?" where it cannot (an ACL
// user without CONFIG, a managed Redis).
func configValues(ctx context.Context, rdb redis.UniversalClient, names ...string) map[string]string {
	out := map[string]string{}
	for _, n := range names {
		out[n] = "?"
		if m, err := rdb.ConfigGet(ctx, n).Result(); err == nil {
			if v, ok := m[n]; ok {
				out[n] = v
			}
		}
	}
	return out
}
