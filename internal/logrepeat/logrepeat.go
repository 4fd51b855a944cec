// Package logrepeat logs a failure that repeats (one per message, per batch,
// per retry) once per topic, kind and interval with a count, whatever its
// rate: a missing exchange refused 333 messages in 8 s, one WARN line each,
// and a log that floods hides the line that matters. The metrics keep the
// exact numbers.
package logrepeat

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// DefaultEvery is the usual interval.
const DefaultEvery = 10 * time.Second

// Log writes the first occurrence of a key (topic, level, message) at once,
// then one line per interval with the count since the last and the latest
// error. The line of an interval is written by Flush (Run calls it) or by
// the key's next occurrence after the interval, whichever comes first.
type Log struct {
	log   *slog.Logger
	every time.Duration

	mu   sync.Mutex
	open map[key]*repeated
}

type key struct {
	topic string
	level slog.Level
	msg   string
}

// repeated is what a key collected since its last line.
type repeated struct {
	since time.Time // when the last line was written
	count int       // occurrences not logged yet
	err   string    // the latest error
}

// New returns a Log writing to log every interval (DefaultEvery when not
// above 0).
func New(log *slog.Logger, every time.Duration) *Log {
	if every <= 0 {
		every = DefaultEvery
	}
	return &Log{log: log, every: every, open: map[key]*repeated{}}
}

// Add records count occurrences of msg for topic ("": the logger's own
// attributes say what repeats), err the latest reason.
// The first occurrence of a key (or the first after a quiet interval) is
// logged at once; the others wait for the interval's line.
func (r *Log) Add(level slog.Level, topic, msg string, count int, err string) {
	if count <= 0 {
		return
	}
	k := key{topic, level, msg}
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.open[k]; ok {
		e.count += count
		e.err = err
		if over := now.Sub(e.since); over >= r.every {
			r.write(k, e.count, e.err, over)
			*e = repeated{since: now}
		}
		return
	}
	r.open[k] = &repeated{since: now}
	r.write(k, count, err, 0)
}

// Run writes each interval's line until ctx ends, then the last ones.
func (r *Log) Run(ctx context.Context) {
	t := time.NewTicker(r.every / 4)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			r.Flush(time.Now(), true)
			return
		case now := <-t.C:
			r.Flush(now, false)
		}
	}
}

// Flush writes the line of every key whose interval ended (every key with
// a count when all is set) and forgets the keys quiet for a whole interval,
// so their next occurrence is logged at once.
func (r *Log) Flush(now time.Time, all bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, e := range r.open {
		if !all && now.Sub(e.since) < r.every {
			continue
		}
		if e.count == 0 {
			delete(r.open, k)
			continue
		}
		r.write(k, e.count, e.err, now.Sub(e.since))
		*e = repeated{since: now}
	}
}

func (r *Log) write(k key, count int, err string, over time.Duration) {
	attrs := []any{"count", count, "err", err}
	if k.topic != "" {
		attrs = append([]any{"topic", k.topic}, attrs...)
	}
	if over > 0 {
		attrs = append(attrs, "over", over.Round(time.Millisecond).String())
	}
	r.log.Log(context.Background(), k.level, k.msg, attrs...)
}
