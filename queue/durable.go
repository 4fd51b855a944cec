package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Durability is what a write must reach before a producer is told it is
// accepted (docs/architecture.md, Guarantees 9). The zero value waits for nothing: the
// master's reply is the acknowledgement, as Redis replicates asynchronously.
type Durability struct {
	// Replicas is how many replicas must have a write (WAIT) before it is
	// acknowledged; 0: none.
	Replicas int
	// Timeout bounds each WAIT (and WAITAOF); 0: DefaultWaitTimeout.
	Timeout time.Duration
	// AOF also waits for the master's own fsync of its append-only file
	// (WAITAOF 1 0, Redis 7.2 or later: see CheckDurability).
	AOF bool
	// Unconfirmed, when set, is told how many items of one write were not
	// confirmed (ErrNotReplicated) or refused (ErrTooFewReplicas): a metric.
	Unconfirmed func(n int)
}

// DefaultWaitTimeout bounds a WAIT when Durability.Timeout is 0.
const DefaultWaitTimeout = 500 * time.Millisecond

// ErrNotReplicated is a write that Redis's master made but that fewer
// replicas (or no fsync) than asked for confirmed within the timeout: a
// failover may or may not keep it. Scheduling is idempotent by id (by
// member on raw topics), so repeating the same call is safe.
var ErrNotReplicated = errors.New("written, not confirmed on the replicas asked for: it may or may not survive a failover; repeating with the same id is safe")

// ErrTooFewReplicas is a write refused before it was made: fewer replicas
// are connected to the master than Durability.Replicas asks for, so no
// acknowledgement could be honest. Nothing was written; retry later.
var ErrTooFewReplicas = errors.New("fewer replicas connected than the acceptance asks for: nothing written; retry when they are back")

// ErrAOFOff is a write refused before it was made: acceptance waits for
// the master's AOF fsync (WAITAOF) and its appendonly is off, so WAITAOF
// could confirm nothing. Nothing was written; retry when it is back on.
var ErrAOFOff = errors.New("the server's appendonly is off (aof_enabled:0), so WAITAOF cannot confirm any write: nothing written; retry when appendonly is yes again")

// ErrDurabilityUnsupported is a Durability the server cannot give at all
// (see CheckDurability): a configuration to refuse at start. The errors
// CheckDurability returns match it with errors.Is and say why on their own.
var ErrDurabilityUnsupported = errors.New("the server cannot confirm the durability asked for")

// unsupported is a refusal of CheckDurability: its message, matching
// ErrDurabilityUnsupported.
type unsupported string

func (e unsupported) Error() string      { return string(e) }
func (unsupported) Is(target error) bool { return target == ErrDurabilityUnsupported }

// Unconfirmed reports whether err means that a write was not confirmed as
// durable (ErrNotReplicated, ErrTooFewReplicas or ErrAOFOff): the producer
// should retry it, which is safe.
func Unconfirmed(err error) bool {
	return errors.Is(err, ErrNotReplicated) || errors.Is(err, ErrTooFewReplicas) || errors.Is(err, ErrAOFOff)
}

// WithDurability returns a Queue whose acceptance paths (Schedule,
// ScheduleMember, ScheduleBatch, ScheduleEach, ScheduleIntake, Bury,
// SetRecurrence and Reschedule) wait for d after their writes, on the connection that made
// them, one WAIT per pipeline (per node on Redis Cluster). The other
// operations (claims, acks, cancels) are unchanged: a lost one repeats a
// delivery or is repeated by its caller.
func (q *Queue) WithDurability(d Durability) *Queue {
	c := *q
	if d.Timeout <= 0 {
		d.Timeout = DefaultWaitTimeout
	}
	c.durable = d
	c.gate = &replicaGate{}
	return &c
}

// Durability is what q's acceptance waits for.
func (q *Queue) Durability() Durability { return q.durable }

func (q *Queue) waiting() bool { return q.durable.Replicas > 0 || q.durable.AOF }

// CheckDurability refuses a Durability the server cannot give (wrapping
// ErrDurabilityUnsupported): WAITAOF needs a server that has the command
// (Redis or Valkey 7.2 or later) and whose appendonly is yes, else it
// confirms nothing. It reads the node q reaches (any node of a Cluster).
func (q *Queue) CheckDurability(ctx context.Context) error {
	if !q.durable.AOF {
		return nil
	}
	info, err := q.rdb.Info(ctx, "server").Result()
	if err != nil {
		return fmt.Errorf("check WAITAOF support: %w", err)
	}
	v := infoField(info, "redis_version")
	has, err := q.hasCommand(ctx, "waitaof")
	if err != nil { // COMMAND refused (an ACL): judge by the version
		var major, minor int
		if _, err := fmt.Sscanf(v, "%d.%d", &major, &minor); err != nil {
			return fmt.Errorf("check WAITAOF support: redis_version %q: %w", v, err)
		}
		has = major > 7 || major == 7 && minor >= 2
	}
	if !has {
		return unsupported(fmt.Sprintf("waiting for the AOF fsync needs WAITAOF, Redis 7.2 or later; this server is %s and has no WAITAOF", v))
	}
	persistence, err := q.rdb.Info(ctx, "persistence").Result()
	if err != nil {
		return fmt.Errorf("check appendonly: %w", err)
	}
	if infoField(persistence, "aof_enabled") == "0" {
		return unsupported("waiting for the AOF fsync needs the server's appendonly yes; this server has appendonly no (aof_enabled:0), so WAITAOF could confirm no write")
	}
	return nil
}

// hasCommand reports whether the server knows name (COMMAND INFO answers
// nil for a command it does not know).
func (q *Queue) hasCommand(ctx context.Context, name string) (bool, error) {
	v, err := q.rdb.Do(ctx, "command", "info", name).Slice()
	if err != nil {
		return false, fmt.Errorf("COMMAND INFO %s: %w", name, err)
	}
	return len(v) == 1 && v[0] != nil, nil
}

// waitCmds are the confirmations queued after a pipeline's writes.
type waitCmds struct {
	wait *redis.Cmd
	aof  *redis.Cmd
}

// addWait queues the WAIT (and WAITAOF) of q's durability on pipe, after
// the writes it covers.
func (q *Queue) addWait(ctx context.Context, pipe redis.Pipeliner) waitCmds {
	var w waitCmds
	if q.durable.Replicas > 0 {
		w.wait = pipe.Do(ctx, "wait", q.durable.Replicas, q.durable.Timeout.Milliseconds())
	}
	if q.durable.AOF {
		w.aof = pipe.Do(ctx, "waitaof", 1, 0, q.durable.Timeout.Milliseconds())
	}
	return w
}

// confirmed reads w's replies: nil when the writes before them reached
// what q's durability asks for.
func (q *Queue) confirmed(w waitCmds) error {
	if w.wait != nil {
		n, err := w.wait.Int64()
		if err != nil {
			return fmt.Errorf("%w: WAIT: %w", ErrNotReplicated, err)
		}
		q.gate.learn(int(n), q.durable.Replicas)
		if int(n) < q.durable.Replicas {
			return fmt.Errorf("%w: %d of %d replicas confirmed within %s", ErrNotReplicated, n, q.durable.Replicas, q.durable.Timeout)
		}
	}
	if w.aof != nil {
		v, err := w.aof.Int64Slice()
		if err != nil {
			return fmt.Errorf("%w: WAITAOF: %w", ErrNotReplicated, err)
		}
		if len(v) < 1 || v[0] < 1 {
			return fmt.Errorf("%w: the master did not fsync its AOF within %s", ErrNotReplicated, q.durable.Timeout)
		}
	}
	return nil
}

// unconfirmed tells the durability's metric about n items.
func (q *Queue) unconfirmed(n int) {
	if n > 0 && q.durable.Unconfirmed != nil {
		q.durable.Unconfirmed(n)
	}
}

// runConfirmed runs one script call as s.Run does, followed on the same
// connection by q's WAIT when q waits. cmd is the script's reply; confirm
// wraps ErrNotReplicated when the script ran but its write is not
// confirmed. A write refused before it ran (ErrTooFewReplicas) is cmd's
// error.
func (q *Queue) runConfirmed(ctx context.Context, s *redis.Script, keys []string, args ...any) (cmd *redis.Cmd, confirm error) {
	if !q.waiting() {
		return s.Run(ctx, q.rdb, keys, args...), nil
	}
	cmds, confirms, err := q.evalAll(ctx, s, []scriptCall{{keys: keys, args: args}})
	if err != nil {
		if Unconfirmed(err) {
			q.unconfirmed(1)
		}
		cmd := redis.NewCmd(ctx)
		cmd.SetErr(err)
		return cmd, nil
	}
	if cmds[0].Err() != nil {
		return cmds[0], nil
	}
	if confirms[0] != nil {
		q.unconfirmed(1)
	}
	return cmds[0], confirms[0]
}
