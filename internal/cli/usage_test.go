package cli

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"
)

// TestHelpShowsDoubleDashFlags: help advertises --flag, the style every
// example uses, never Go's -flag.
func TestHelpShowsDoubleDashFlags(t *testing.T) {
	for _, args := range [][]string{
		{"schedule", "--help"}, {"cancel", "--help"}, {"reschedule", "--help"}, {"stats", "--help"},
		{"dead", "list", "--help"}, {"dead", "requeue", "--help"}, {"check", "--help"},
	} {
		var out bytes.Buffer
		if code := dispatch(context.Background(), args, stdio{in: strings.NewReader(""), out: &out, err: io.Discard}); code != exitOK {
			t.Errorf("%v: exit %d", args, code)
		}
		_, flags, ok := strings.Cut(out.String(), "\nFlags:\n")
		if !ok || !strings.Contains(flags, "  --json") {
			t.Errorf("%v: help has no --json flag:\n%s", args, out.String())
		}
		for _, line := range strings.Split(flags, "\n") {
			if strings.HasPrefix(line, "  -") && !strings.HasPrefix(line, "  --") {
				t.Errorf("%v: flag in -flag style: %q", args, line)
			}
		}
	}
}

// TestHelpPrintsEachDefaultOnceAndQuotesOnlyText: --limit's default is a
// number (it printed (default "20")), --slot's text already says its
// default (it also printed (default "-1")), and a text default keeps its
// quotes.
func TestHelpPrintsEachDefaultOnceAndQuotesOnlyText(t *testing.T) {
	help := func(args ...string) string {
		var out bytes.Buffer
		if code := dispatch(context.Background(), args, stdio{in: strings.NewReader(""), out: &out, err: io.Discard}); code != exitOK {
			t.Fatalf("%v: exit %d", args, code)
		}
		return out.String()
	}
	dead := help("dead", "list", "--help")
	for _, want := range []string{"(0: all) (default 20)\n", "only this slot (default: every slot)\n"} {
		if !strings.Contains(dead, want) {
			t.Errorf("dead list --help lacks %q:\n%s", want, dead)
		}
	}
	if strings.Contains(dead, `"20"`) || strings.Contains(dead, `"-1"`) {
		t.Errorf("dead list --help quotes a number or doubles a default:\n%s", dead)
	}
	if ls := help("ls", "--help"); !strings.Contains(ls, `(default "scheduled")`) || !strings.Contains(ls, "(default 20)") {
		t.Errorf("ls --help: want (default 20) and (default \"scheduled\"):\n%s", ls)
	}
}

// TestMisusedCommandsPrintOneLineAndAHint: every command answers a wrong
// command line with exit 2, what is wrong, and where to read the help.
func TestMisusedCommandsPrintOneLineAndAHint(t *testing.T) {
	newCLIEnv(t)
	for _, tc := range []struct {
		args []string
		want string
		hint string
	}{
		{[]string{"nope"}, `unknown command "nope"`, "see 'delaybridge help'"},
		{[]string{"check", "extra"}, "takes no arguments", "see 'delaybridge check --help'"},
		{[]string{"check", "--bogus"}, "unknown flag --bogus", "see 'delaybridge check --help'"},
		{[]string{"cancel", "orders"}, "exactly one of --id, --member or --member-file", "see 'delaybridge cancel --help'"},
		{[]string{"reschedule", "orders", "--id", "a"}, "give the new time", "see 'delaybridge reschedule --help'"},
		{[]string{"stats", "--interval", "-1s"}, "--interval must be positive", "see 'delaybridge stats --help'"},
		{[]string{"dead"}, "want list, requeue or purge", "see 'delaybridge dead --help'"},
		{[]string{"dead", "bury"}, `unknown command "bury"`, "see 'delaybridge dead --help'"},
		{[]string{"dead", "purge", "orders"}, "exactly one of --id, --member or --all", "see 'delaybridge dead purge --help'"},
		{[]string{"schedule", "orders", "--in", "soon", "x"}, "not a duration", "see 'delaybridge schedule --help'"},
		{[]string{"run", "extra"}, "takes no arguments", "see 'delaybridge run --help'"},
	} {
		var out, errb bytes.Buffer
		code := dispatch(context.Background(), tc.args, stdio{in: strings.NewReader(""), out: &out, err: &errb})
		lines := strings.Split(strings.TrimSuffix(errb.String(), "\n"), "\n")
		if code != exitConfig || len(lines) != 2 || !strings.Contains(lines[0], tc.want) || lines[1] != tc.hint {
			t.Errorf("%v: exit %d, stderr %q; want exit 2, %q and %q", tc.args, code, errb.String(), tc.want, tc.hint)
		}
		if out.Len() > 0 {
			t.Errorf("%v: wrote %q to stdout", tc.args, out.String())
		}
	}
}

// TestScheduleRefusesToReadATerminal: without BODY, schedule reads standard
// input, but a terminal there means nobody piped anything: it says so
// instead of waiting. /dev/null is no terminal: it is an empty body.
func TestScheduleRefusesToReadATerminal(t *testing.T) {
	e := newCLIEnv(t)
	tty := openPTY(t)
	var out, errb bytes.Buffer
	code := dispatch(e.ctx, []string{"schedule", "orders"}, stdio{in: tty, out: &out, err: &errb})
	if code != exitConfig || !strings.Contains(errb.String(), "standard input is a terminal") || !strings.Contains(errb.String(), "pipe it") {
		t.Errorf("schedule from a terminal: exit %d, stderr %q", code, errb.String())
	}
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	errb.Reset()
	code = dispatch(e.ctx, []string{"schedule", "orders", "--empty"}, stdio{in: null, out: &out, err: &errb})
	if code != exitOK {
		t.Errorf("schedule --empty < /dev/null: exit %d, stderr %q", code, errb.String())
	}
}

// TestScheduleEmptyBodyNeedsEmptyFlag: an empty body is refused, unless
// --empty says it is meant.
func TestScheduleEmptyBodyNeedsEmptyFlag(t *testing.T) {
	e := newCLIEnv(t)
	if code, _, errs := e.run("", "schedule", "legacy"); code != exitConfig || !strings.Contains(errs, "--empty") {
		t.Errorf("empty stdin: exit %d, stderr %q", code, errs)
	}
	e.mustRun("", "schedule", "legacy", "--empty")
	if n, _ := e.rdb.ZCard(e.ctx, e.legacy.Keys(0).Scheduled).Result(); n != 1 {
		t.Errorf("scheduled %d messages, want the empty one", n)
	}
}
