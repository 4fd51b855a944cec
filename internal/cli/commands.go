// Package cli is the delaybridge binary's commands: `delaybridge run`, the
// daemon (run.go wires the configuration, clients, the forwarder, intakes and
// servers), and the commands that schedule, inspect and repair (cli.go's
// plumbing, a file per command). What they do to Redis is queue's,
// membership's and flowstate's; cmd/delaybridge only hands the process's
// arguments, streams and signals to Main.
package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/redis/go-redis/v9"
)

// Exit codes.
const (
	exitOK     = 0
	exitFail   = 1 // the command ran and failed
	exitConfig = 2 // bad configuration or usage
)

// stdio is what the process hands a command: where it reads and writes,
// and the build it runs as.
type stdio struct {
	in       io.Reader
	out, err io.Writer
	build    Build
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

// Main runs the command line args (without the program's name) as build b
// with the process's streams and returns the exit code. ctx ends on the
// first signal: the daemon and the servers then shut down gracefully.
func Main(ctx context.Context, args []string, b Build, in io.Reader, out, errw io.Writer) int {
	if len(args) > 0 && args[0] != "run" && args[0] != "console" {
		// A one-shot command says in its own words that Redis is
		// unreachable; go-redis's pool lines before it are noise. The
		// servers route them into slog instead (runDaemon, logging.go).
		redis.SetLogger(quietRedis{})
	}
	return dispatch(ctx, args, stdio{in: in, out: out, err: errw, build: b})
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
