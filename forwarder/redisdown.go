package forwarder

import (
	"cmp"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/delaybridge/delaybridge/internal/logrepeat"
)

// While Redis is unreachable every loop and every scanner fails at its own
// pace (each slot's claim, each heartbeat, each reap): one line each would
// flood the log (46 WARN lines in 16 s with one topic) and hide the line
// that matters. The first failure that is Redis not answering at all
// (refused, timed out, no route) writes one WARN that says so, with the
// hint of where the daemon looks for Redis; the failures after it, until a
// call succeeds, are counted, not logged (the metrics keep them). Other
// repeating Redis failures (an answer that is an error) go through repeats
// (one line per topic, kind and interval, with a count). When failures have
// lasted redisDownAfter without a success in between, one ERROR says so;
// the first success after that (or after any failure logged) writes one
// INFO "redis reachable again" with how long and how many calls failed.

// blipUnder is how short a run of failures ends without its INFO line.
const blipUnder = time.Second

// defaultRedisDownAfter is how long Redis failures last before the ERROR.
const defaultRedisDownAfter = 30 * time.Second

// redisHealth tracks whether Redis answers, for those lines; the scanners
// and the loops that call Redis share one per replica.
type redisHealth struct {
	repeats   *logrepeat.Log
	log       *slog.Logger
	downAfter time.Duration // failures this long without a success: the ERROR

	hint string // what the outage's WARN adds (Options.RedisHint)

	down      atomic.Bool // a failure since the last success: ok's fast path
	mu        sync.Mutex
	downSince time.Time // first failure since the last success; zero: answering
	erred     bool      // the ERROR of this outage was written
	announced bool      // the WARN that Redis does not answer was written
	failures  int       // failed calls since the last success
	// recovered is when the last outage's end was logged: failures within
	// blipUnder of it are a connection pool still reconnecting.
	recovered time.Time
}

func newRedisHealth(repeats *logrepeat.Log, log *slog.Logger, downAfter time.Duration) *redisHealth {
	return &redisHealth{repeats: repeats, log: log, downAfter: cmp.Or(downAfter, defaultRedisDownAfter)}
}

// failed logs a failed Redis call (msg, for topic or "" for the replica)
// through repeats, and the outage's ERROR once it has lasted.
func (r *redisHealth) failed(topic, msg string, err error) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.downSince.IsZero() && now.Sub(r.recovered) < blipUnder {
		// The data path and the heartbeat have pools of their own, and
		// go-redis answers a pool's last dial error until its background
		// dial succeeds (up to a second): the outage was over when one
		// call succeeded, so this is no new one (the metrics count it).
		return
	}
	if r.downSince.IsZero() {
		r.downSince = now
		r.down.Store(true)
	}
	r.failures++
	switch {
	case r.announced:
	case unreachable(err):
		r.announced = true
		attrs := []any{"err", err}
		if r.hint != "" {
			attrs = append(attrs, "hint", r.hint)
		}
		r.log.Warn("redis does not answer: nothing is claimed or delivered until it does; further failures are counted until then", attrs...)
	default:
		r.repeats.Add(slog.LevelWarn, topic, msg, 1, err.Error())
	}
	if !r.erred && now.Sub(r.downSince) >= r.downAfter {
		r.erred = true
		r.log.Error("redis unreachable: every Redis call has failed; nothing is claimed or delivered until it answers",
			"for", now.Sub(r.downSince).Round(time.Second).String(), "err", err)
	}
}

// ok records a Redis call that succeeded, sent at started: after failures,
// one INFO. A call sent before the first failure of the outage says
// nothing of Redis now (its answer was on the way when a cut closed the
// next call's connection): it ends nothing.
func (r *redisHealth) ok(started time.Time) {
	if !r.down.Load() {
		return // the claim path calls it for every batch
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.downSince.IsZero() || started.Before(r.downSince) {
		return
	}
	r.down.Store(false)
	// A blip (one call failed on a connection that was closing while the
	// next already succeeded) is no outage to announce the end of.
	if down := time.Since(r.downSince); r.erred || r.announced || down >= blipUnder {
		r.log.Info("redis reachable again", "down_for", down.Round(time.Millisecond).String(), "failed_calls", r.failures)
		r.recovered = time.Now()
	}
	r.downSince, r.erred, r.announced, r.failures = time.Time{}, false, false, 0
}

// unreachable reports whether err is Redis not answering at all (refused,
// timed out, no route, name not found, a dropped connection), as opposed
// to an answer that is an error.
func unreachable(err error) bool {
	var op *net.OpError
	var dns *net.DNSError
	return errors.As(err, &op) || errors.As(err, &dns) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded)
}
