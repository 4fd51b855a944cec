package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/delaybridge/delaybridge/config"
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
// cluster and sentinel changes) into slog, so a JSON log stays JSON. The
// library has one logger for the whole process (redis.SetLogger, a global of
// its own): the daemon sets it once at start.
type redisLogger struct{ log *slog.Logger }

func (r redisLogger) Printf(ctx context.Context, format string, v ...any) {
	r.log.WarnContext(ctx, strings.TrimSpace(fmt.Sprintf(format, v...)), "source", "go-redis")
}

// quietRedis drops go-redis's log lines: the CLI's one-shot commands report
// a Redis they cannot reach themselves, once, in their own words.
type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}
