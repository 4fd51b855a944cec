package cli

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strings"

	"github.com/delaybridge/delaybridge/config"
	"github.com/delaybridge/delaybridge/internal/logrepeat"
)

// newLogger is the daemon's logger: JSON (or text) on stderr at the
// configured level. Durations are written as text ("1.38s"), not as
// nanoseconds: a person reads these logs.
func newLogger(cfg config.Config, s stdio) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: durationsAsText}
	if cfg.LogFormat == "text" {
		return slog.New(slog.NewTextHandler(s.err, opts))
	}
	return slog.New(slog.NewJSONHandler(s.err, opts))
}

// durationsAsText is a slog ReplaceAttr that writes a time.Duration as its
// String.
func durationsAsText(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		return slog.String(a.Key, a.Value.Duration().String())
	}
	return a
}

// redisLogger routes go-redis's own log lines (pool and reconnect trouble,
// cluster and sentinel changes) into slog, so a JSON log stays JSON, and
// folds their repeats: a 10 s outage made the pool write "failed to dial
// after 5 attempts" 23 times. A failure to dial is the daemon's outage
// line's to report (forwarder's redisdown.go, with the address and the
// variable), so it is DEBUG; every other line goes through repeats, once
// per kind and interval with a count. go-redis has one logger for the
// whole process (redis.SetLogger, a global of its own, no per-client
// option in v9): runDaemon sets it once, before the first client exists.
type redisLogger struct {
	log     *slog.Logger
	repeats *logrepeat.Log
}

// redisVerb is a Printf verb of go-redis's format strings.
var redisVerb = regexp.MustCompile(`%[-+# 0-9.]*[a-zA-Z]`)

func (r redisLogger) Printf(ctx context.Context, format string, v ...any) {
	text := strings.TrimSpace(fmt.Sprintf(format, v...))
	if strings.Contains(format, "failed to dial") {
		r.log.DebugContext(ctx, text, "source", "go-redis")
		return
	}
	// The format is the kind (the same line with another address or
	// count is a repeat); the text is the latest occurrence.
	kind := "go-redis: " + strings.TrimPrefix(redisVerb.ReplaceAllString(strings.TrimSpace(format), "…"), "redis: ")
	r.repeats.Add(slog.LevelWarn, "", kind, 1, text)
}

// quietRedis drops go-redis's log lines: the CLI's one-shot commands report
// a Redis they cannot reach themselves, once, in their own words.
type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}
