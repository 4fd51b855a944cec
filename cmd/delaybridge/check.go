package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/delaybridge/delaybridge/sinks"
)

// runCheck is `delaybridge check`: validate the configuration, reach Redis
// and every topic's broker, and say what is wrong.
func runCheck(ctx context.Context, args []string, s stdio) int {
	if len(args) > 0 {
		fmt.Fprintln(s.out, "usage: delaybridge check\n\nValidates DELAYBRIDGE_* variables and reaches Redis and every topic's broker.\nExit 0: all good; 1: a service is unreachable; 2: bad configuration.")
		if args[0] == "-h" || args[0] == "--help" || args[0] == "-help" {
			return exitOK
		}
		return exitConfig
	}
	cfg, code := loadConfig(s)
	if code != exitOK {
		return code
	}
	fmt.Fprintf(s.out, "configuration: ok (%d topics)\n", len(cfg.Topics))
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()

	failed := false
	rdb, err := cfg.Redis.Client()
	if err == nil {
		err = rdb.Ping(ctx).Err()
		rdb.Close()
	}
	if err != nil {
		fmt.Fprintf(s.out, "redis: FAILED: %v\n", err)
		failed = true
	} else {
		fmt.Fprintln(s.out, "redis: ok")
	}
	quiet := slog.New(slog.NewTextHandler(s.err, &slog.HandlerOptions{Level: slog.LevelError}))
	for _, t := range cfg.Topics {
		sink, err := newSink(cfg, t, quiet)
		if err == nil {
			err = waitReady(ctx, sink)
			sink.Close()
		}
		if err != nil {
			fmt.Fprintf(s.out, "topic %s (%s): FAILED: %v\n", t.Name, t.Sink, err)
			failed = true
		} else {
			fmt.Fprintf(s.out, "topic %s (%s): ok\n", t.Name, t.Sink)
		}
	}
	if failed {
		return exitFail
	}
	return exitOK
}

// waitReady polls a sink's Ping until it succeeds or ctx ends.
func waitReady(ctx context.Context, s sinks.Sink) error {
	p, ok := s.(sinks.Pinger)
	if !ok {
		return nil
	}
	for {
		err := p.Ping(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}
