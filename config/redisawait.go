package config

import (
	"strconv"
	"time"

	"github.com/delaybridge/delaybridge/queue"
)

// RedisWait is what every acceptance path (intakes, HTTP API, CLI) waits
// for after its write and before it acknowledges (docs/architecture.md, Guarantees 9).
type RedisWait struct {
	// Replicas is how many replicas must have the write (WAIT); 0: none.
	Replicas int
	// Timeout bounds each wait.
	Timeout time.Duration
	// AOF also waits for the master's fsync (WAITAOF, Redis ≥ 7.2).
	AOF bool
}

// maxWaitTimeout keeps a WAIT inside the Redis read timeout (3 s): the
// pipeline that carries it is read with one deadline.
const maxWaitTimeout = 2 * time.Second

func (p *parser) redisWait(e *env) RedisWait {
	return RedisWait{
		Replicas: p.intIn("REDIS_WAIT_REPLICAS", e.RedisWaitReplicas, 0, 64),
		Timeout:  p.duration("REDIS_WAIT_TIMEOUT", e.RedisWaitTimeout, time.Millisecond, maxWaitTimeout),
		AOF:      p.bool("REDIS_WAIT_AOF", e.RedisWaitAOF),
	}
}

// Durability is w as the queue package takes it.
func (w RedisWait) Durability() queue.Durability {
	return queue.Durability{Replicas: w.Replicas, Timeout: w.Timeout, AOF: w.AOF}
}

func (w RedisWait) values() map[string]string {
	return map[string]string{
		"REDIS_WAIT_REPLICAS": strconv.Itoa(w.Replicas),
		"REDIS_WAIT_TIMEOUT":  w.Timeout.String(),
		"REDIS_WAIT_AOF":      strconv.FormatBool(w.AOF),
	}
}
