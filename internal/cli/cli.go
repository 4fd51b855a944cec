package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/config"
	"github.com/delaybridge/delaybridge/flowstate"
	"github.com/delaybridge/delaybridge/internal/opstext"
	"github.com/delaybridge/delaybridge/queue"
	"github.com/delaybridge/delaybridge/redisclient"
)

// The plumbing shared by the producer and operator commands (schedule,
// cancel, reschedule, stats, dead): configuration, a queue over Redis, flag
// parsing, due times and output.

// cli is one run of a producer or operator command.
type cli struct {
	name string // e.g. "schedule", for messages
	s    stdio
	cfg  config.Config
	rdb  redis.UniversalClient
	q    *queue.Queue
	flow *flowstate.Store // flow control's state, over q
}

// openCLI loads the DELAYBRIDGE_* configuration (topics optional: the
// registry has them, see registry.go) and connects to Redis. On failure it
// has printed why and returns the exit code.
func openCLI(name string, s stdio) (*cli, int) {
	cfg, err := config.LoadCLI()
	if err != nil {
		fmt.Fprintf(s.err, "delaybridge %s: bad configuration:\n", name)
		var joined interface{ Unwrap() []error }
		if errors.As(err, &joined) {
			for _, e := range joined.Unwrap() {
				fmt.Fprintf(s.err, "  %v\n", e)
			}
		} else {
			fmt.Fprintf(s.err, "  %v\n", err)
		}
		for _, m := range config.Misspelt(os.Environ()) {
			fmt.Fprintf(s.err, "  %s\n", m)
		}
		return nil, exitConfig
	}
	warnMisspelt(name, cfg, s)
	rdb, err := redisclient.New(cfg.Redis)
	if err != nil {
		fmt.Fprintf(s.err, "delaybridge %s: redis: %v\n", name, err)
		return nil, exitConfig
	}
	// Acceptance (schedule, recur set, reschedule) waits as the daemon's does.
	q := queue.New(rdb).WithDurability(cfg.RedisWait.Durability())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := q.CheckDurability(ctx); err != nil {
		fmt.Fprintf(s.err, "delaybridge %s: bad configuration:\n  %s_REDIS_WAIT_AOF=true: %v\n", name, config.Prefix, err)
		rdb.Close()
		return nil, exitConfig
	}
	return &cli{name: name, s: s, cfg: cfg, rdb: rdb, q: q, flow: flowstate.New(q)}, exitOK
}

func (c *cli) close() { c.rdb.Close() }

// warnMisspelt warns of each variable no setting reads that is within two
// edits of one that does, as check and run do: schedule with
// DELAYBRIDGE_REDIS_ULR set wrote to the default Redis without a word.
// Only those with a suggestion: a CLI shares the daemon's environment, and
// a variable it does not read is no mistake there.
func warnMisspelt(name string, cfg config.Config, s stdio) {
	for _, v := range cfg.Unused(os.Environ()) {
		if sug := cfg.Suggest(v); sug != "" {
			fmt.Fprintf(s.err, "delaybridge %s: warning: %s is not used by this configuration: did you mean %s?\n", name, v, sug)
		}
	}
}

// openTopic is openCLI for a command about one topic, and that topic. On
// failure it has printed why and returns the exit code (see topicFailed).
func openTopic(fs *flag.FlagSet, s stdio, name string) (*cli, queue.Topic, int) {
	c, code := openCLI(fs.Name(), s)
	if c == nil {
		return nil, queue.Topic{}, code
	}
	t, err := c.topic(name)
	if err != nil {
		return nil, queue.Topic{}, c.topicFailed(fs, err)
	}
	return c, t, exitOK
}

// openTopics is openTopic for the named topics, or every configured (else
// registered) one when none is named.
func openTopics(fs *flag.FlagSet, s stdio, names []string) (*cli, []queue.Topic, int) {
	c, code := openCLI(fs.Name(), s)
	if c == nil {
		return nil, nil, code
	}
	ts, err := c.topics(names)
	if err != nil {
		return nil, nil, c.topicFailed(fs, err)
	}
	return c, ts, exitOK
}

// topicFailed closes c and prints why a topic could not be resolved: exit 2
// for a topic that is unknown or disagrees with the registry (the command
// line is wrong), 1 when Redis could not tell.
func (c *cli) topicFailed(fs *flag.FlagSet, err error) int {
	c.close()
	if errors.Is(err, queue.ErrUnknownTopic) || errors.Is(err, queue.ErrLayoutMismatch) {
		return badUsage(fs, c.s, "%v", err)
	}
	return c.fail(err)
}

// topic finds a topic by name: configured (and agreeing with the
// registry), or registered by the daemon.
func (c *cli) topic(name string) (queue.Topic, error) { return c.topicFromRegistry(name) }

// topics finds the named topics, or every configured (else registered) one
// when none is named.
func (c *cli) topics(names []string) ([]queue.Topic, error) {
	if len(names) == 0 {
		return c.allTopics()
	}
	out := make([]queue.Topic, 0, len(names))
	for _, n := range names {
		t, err := c.topic(n)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// fail prints an error and returns the exit code it deserves: 2 for what the
// user must change in the command line, 1 for anything else.
func (c *cli) fail(err error) int {
	err = opstext.Wrap(err)
	if usageError(err) {
		return misused(c.s.err, c.name, err.Error())
	}
	fmt.Fprintf(c.s.err, "delaybridge %s: %v\n", c.name, err)
	c.explainUnreachable(err)
	if errors.Is(err, queue.ErrRedisFull) {
		fmt.Fprintf(c.s.err, "delaybridge %s: Redis is full, nothing was written: raise its maxmemory or free memory; "+
			"the daemon still delivers the backlog, which frees room (docs/operations.md, \"Redis is full\")\n", c.name)
	}
	if errors.Is(err, queue.ErrTooLarge) {
		fmt.Fprintf(c.s.err, "delaybridge %s: nothing was written; the limit is %s_MAX_MESSAGE_SIZE, or the topic's own %s_TOPIC_<NAME>_MAX_MESSAGE_SIZE: "+
			"raise it only as far as the destination accepts (docs/configuration.md, \"Message size\")\n", c.name, config.Prefix, config.Prefix)
	}
	if queue.Unconfirmed(err) {
		fmt.Fprintf(c.s.err, "delaybridge %s: not acknowledged: fewer replicas than %s_REDIS_WAIT_REPLICAS confirmed it; "+
			"repeat the same command (with the same id) when they are back: it is safe (docs/operations.md, \"Durable acceptance\")\n", c.name, config.Prefix)
	}
	return exitFail
}

func usageError(err error) bool {
	return errors.Is(err, queue.ErrInvalidEnvelope) || errors.Is(err, queue.ErrNotEnvelope) ||
		errors.Is(err, queue.ErrBadDueTime) || errors.Is(err, queue.ErrBadSpec) || errors.Is(err, errUsage) ||
		errors.Is(err, queue.ErrNotFair)
}

// errUsage marks errors in the command line.
var errUsage = errors.New("usage")

func usagef(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, args...))
}

// openServer opens the configuration of a command that serves until it is
// stopped (console, api): it takes no arguments, only -h.
func openServer(name, usage string, args []string, s stdio) (*cli, int) {
	fs := newFlags(name, usage, s)
	pos, code, ok := parseFlags(fs, args, s)
	if !ok {
		return nil, code
	}
	if len(pos) != 0 {
		return nil, badUsage(fs, s, "%s takes no arguments", name)
	}
	return openCLI(name, s)
}

// newFlags is a FlagSet that prints nothing by itself: parseFlags prints the
// help (usage.go) to stdout when asked, and the problem with a hint to
// stderr.
func newFlags(name, usage string, s stdio) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() { printHelp(fs.Output(), fs, usage) }
	return fs
}

// parseFlags parses flags wherever they stand among the arguments (so
// `schedule orders --in 5m body` works) and returns the positional
// arguments; "--" ends the flags. ok false means the command must return
// code.
func parseFlags(fs *flag.FlagSet, args []string, s stdio) (pos []string, code int, ok bool) {
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.SetOutput(s.out)
				fs.Usage()
				return nil, exitOK, false
			}
			return nil, misused(s.err, fs.Name(), flagProblem(err)), false
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, exitOK, true
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), exitOK, true
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}

// badUsage prints a usage problem and where the help is, and returns 2.
func badUsage(fs *flag.FlagSet, s stdio, format string, args ...any) int {
	return misused(s.err, fs.Name(), fmt.Sprintf(format, args...))
}

// headerFlags collects repeated --header name=value flags.
type headerFlags map[string]string

func (h headerFlags) String() string { return "" }

func (h headerFlags) Set(v string) error {
	name, value, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return fmt.Errorf("want name=value, got %q", v)
	}
	h[name] = value
	return nil
}

// parseWhen reads --at and --in; ok is false when neither is given.
func parseWhen(at, in string) (queue.When, bool, error) {
	switch {
	case at != "" && in != "":
		return queue.When{}, false, usagef("give --at or --in, not both")
	case at != "":
		t, err := parseTime(at)
		if err != nil {
			return queue.When{}, false, err
		}
		return queue.At(t), true, nil
	case in != "":
		d, err := time.ParseDuration(in)
		if err != nil {
			return queue.When{}, false, usagef("--in %q is not a duration such as 90s, 15m or 36h", in)
		}
		return queue.In(d), true, nil
	}
	return queue.When{}, false, nil
}

// parseTime reads RFC 3339 or Unix milliseconds.
func parseTime(s string) (time.Time, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.UnixMilli(ms), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, usagef("--at %q is neither RFC 3339 (2030-01-02T15:04:05Z) nor Unix milliseconds", s)
	}
	return t, nil
}

// readInput is the argument, or standard input when it is absent or "-".
func readInput(s stdio, arg string, given bool) ([]byte, error) {
	if given && arg != "-" {
		return []byte(arg), nil
	}
	b, err := io.ReadAll(s.in)
	if err != nil {
		return nil, fmt.Errorf("read standard input: %w", err)
	}
	return b, nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// jsonTime is a time for JSON output: RFC 3339 in UTC, or null when zero.
func jsonTime(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := utcStamp(t)
	return &s
}

// printable shows a member or body for people: as is when it is short
// printable text, quoted otherwise, and cut at max bytes.
func printable(b []byte, max int) string {
	cut := len(b) > max
	if cut {
		b = b[:max]
	}
	s := string(b)
	if !strconv.CanBackquote(s) || strings.ContainsAny(s, "\n\r\t") {
		s = strconv.Quote(s)
	}
	if cut {
		s += "…"
	}
	return s
}

// shortDuration prints a duration in at most two units: 3d4h, 4h3m, 3m2s,
// 2.5s, 120ms.
func shortDuration(d time.Duration) string {
	if d < 0 {
		d = -d
	}
	if r := d.Round(time.Millisecond); r < time.Second {
		return r.String()
	}
	if r := d.Round(100 * time.Millisecond); r < time.Minute {
		return r.String()
	}
	if r := d.Round(time.Second); r < time.Hour {
		return fmt.Sprintf("%dm%ds", int(r.Minutes()), int(r.Seconds())%60)
	}
	if r := d.Round(time.Minute); r < 24*time.Hour {
		return fmt.Sprintf("%dh%dm", int(r.Hours()), int(r.Minutes())%60)
	}
	r := d.Round(time.Hour)
	return fmt.Sprintf("%dd%dh", int(r.Hours())/24, int(r.Hours())%24)
}

// relative says when t is from now: "in 3m2s" or "3m2s ago".
func relative(t, now time.Time) string {
	if t.Before(now) {
		return shortDuration(now.Sub(t)) + " ago"
	}
	return "in " + shortDuration(t.Sub(now))
}
