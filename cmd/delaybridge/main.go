// Command delaybridge moves delayed messages out of Redis sorted sets into
// RabbitMQ or Kafka when they fall due. `delaybridge run` is the daemon; the
// other commands schedule, inspect and repair. This package wires the daemon
// (run.go: configuration, clients, the forwarder, intakes and servers) and
// holds the CLI's commands (cli.go's plumbing, a file per command); what they
// do to Redis is queue's, membership's and flowstate's.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/redis/go-redis/v9"
)

// Exit codes.
const (
	exitOK     = 0
	exitFail   = 1 // the command ran and failed
	exitConfig = 2 // bad configuration or usage
)

// stdio is where a command reads and writes.
type stdio struct {
	in       io.Reader
	out, err io.Writer
}

// command is one sub-command of the binary.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, s stdio) int
}

func commands() []command {
	return []command{
		{"run", "run the daemon (the default)", runDaemon},
		{"check", "validate the configuration and reach Redis and the brokers", runCheck},
		{"schedule", "schedule a message (at a time or after a delay)", runSchedule},
		{"cancel", "cancel a message not yet claimed, by id or member", runCancel},
		{"reschedule", "move a scheduled message to a new time, by id or member", runReschedule},
		{"recur", "set, remove or list recurring messages (cron or @every)", runRecur},
		{"stats", "show the backlog per topic and slot (--watch to follow)", runStats},
		{"dead", "list, requeue or purge dead messages", runDead},
		{"ls", "list a topic's messages by state, a page at a time", runLs},
		{"get", "show one message: state, due time, attempts, last error", runGet},
		{"replicas", "list live replicas and the slots each owns", runReplicas},
		{"topics", "show the topic registry; change or forget an entry", runTopics},
		{"pause", "stop claiming a topic's messages until resume", runPause},
		{"resume", "claim a paused topic's messages again", runResume},
		{"limit", "change a running topic's rate limit or queue-depth hold", runLimit},
		{"console", "serve the web console (read-only without DELAYBRIDGE_CONSOLE_TOKEN)", runConsole},
		{"api", "serve the HTTP API for producers (schedule, get, reschedule, cancel by id)", runAPI},
		{"version", "print the version", runVersion},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	// The first signal asks for a graceful end; a second one ends the
	// process at once, whatever it is waiting for.
	go func() { <-ctx.Done(); stop() }()
	if len(os.Args) > 1 && os.Args[1] != "run" && os.Args[1] != "console" {
		// A one-shot command says in its own words that Redis is
		// unreachable; go-redis's pool lines before it are noise. The
		// servers route them into slog instead (runDaemon, logging.go).
		redis.SetLogger(quietRedis{})
	}
	code := dispatch(ctx, os.Args[1:], stdio{in: os.Stdin, out: os.Stdout, err: os.Stderr})
	stop()
	os.Exit(code)
}

func dispatch(ctx context.Context, args []string, s stdio) int {
	name := "run"
	if len(args) > 0 {
		name, args = args[0], args[1:]
	}
	switch name {
	case "help", "-h", "--help", "-help":
		usage(s.out)
		return exitOK
	}
	for _, c := range commands() {
		if c.name == name {
			return c.run(ctx, args, s)
		}
	}
	fmt.Fprintf(s.err, "delaybridge: unknown command %q\nsee 'delaybridge help'\n", name)
	return exitConfig
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: delaybridge [command] [flags]")
	fmt.Fprintln(w, "\nCommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-12s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nEvery command reads the DELAYBRIDGE_* environment variables; `delaybridge <command> --help` for its flags.")
}
