package cli

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"
)

// How a command talks about its own use: help in `--flag` style (Go's flag
// package prints `-flag`, which the commands accept but do not advertise),
// and a misuse answered by one line and a hint, not the whole help.

// printHelp writes a command's usage text and its flags.
func printHelp(w io.Writer, fs *flag.FlagSet, usage string) {
	fmt.Fprint(w, usage)
	var b strings.Builder
	fs.VisitAll(func(f *flag.Flag) {
		name, text := flag.UnquoteUsage(f)
		fmt.Fprintf(&b, "  --%s", f.Name)
		if name != "" {
			fmt.Fprintf(&b, " %s", name)
		}
		fmt.Fprintf(&b, "\n    \t%s", strings.ReplaceAll(text, "\n", "\n    \t"))
		b.WriteString(defaultNote(f, text))
		b.WriteByte('\n')
	})
	if b.Len() > 0 {
		fmt.Fprint(w, "\nFlags:\n", b.String())
	}
}

// defaultNote is " (default …)" for a flag whose default says something
// that its usage text does not already: quoted only for a string (`--limit`
// printed (default "20"), and `--slot`, whose text says "default: every
// slot", added (default "-1")).
func defaultNote(f *flag.Flag, text string) string {
	d := f.DefValue
	if d == "" || d == "false" || d == "0" || strings.Contains(text, "(default") {
		return ""
	}
	if g, ok := f.Value.(flag.Getter); ok {
		if _, isString := g.Get().(string); isString {
			return fmt.Sprintf(" (default %q)", d)
		}
	}
	return " (default " + d + ")"
}

// misused prints what is wrong with a command line in one line, and where to
// read more, and returns exitConfig. command is e.g. "schedule" or "dead list".
func misused(w io.Writer, command, problem string) int {
	fmt.Fprintf(w, "delaybridge %s: %s\nsee 'delaybridge %s --help'\n", command, problem, command)
	return exitConfig
}

// flagProblem is the flag package's complaint in `--flag` style.
func flagProblem(err error) string {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return "unknown flag --" + strings.TrimPrefix(name, "-")
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return "flag --" + strings.TrimPrefix(name, "-") + " needs a value"
	}
	return strings.Replace(msg, " for flag -", " for flag --", 1)
}

// readsTerminal reports whether r is an interactive terminal: a command that
// would read its input from it waits for typing nobody was asked for.
// (/dev/null is a character device too, but no terminal.)
func readsTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
