// Command delaybridge moves delayed messages out of Redis sorted sets into
// RabbitMQ, Kafka or a Redis stream when they fall due. `delaybridge run`
// is the daemon; the other commands schedule, inspect and repair. This
// package only wires the process to them: its arguments, streams, signals
// and exit code. The commands are internal/cli's.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/delaybridge/delaybridge/internal/cli"
)

// Stamped at build time by `make build`, scripts/build-static.sh and the
// release workflow, the version from the repository's VERSION file:
//
//	-ldflags "-X main.version=0.2.0 -X main.commit=… -X main.date=2026-…Z"
var (
	version = "dev"
	commit  = "unknown"
	date    = "unknown"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	// The first signal asks for a graceful end; a second one ends the
	// process at once, whatever it is waiting for.
	go func() { <-ctx.Done(); stop() }()
	build := cli.Build{Version: version, Commit: commit, Date: date}
	code := cli.Main(ctx, os.Args[1:], build, os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
