package chaos

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
)

// row is one scenario's line of the summary table.
type row struct {
	scenario string
	counted  bool // false: the scenario stopped before it counted
	failed   bool
	o        e2etest.Outcome
	notes    string
}

// table collects the rows of every scenario for TestMain to print.
var table struct {
	sync.Mutex
	rows map[string]*row
}

// report enters a scenario in the summary table; its row says "did not
// finish" until count fills it, and is marked failed if the test fails.
func report(t *testing.T, scenario string) *row {
	r := &row{scenario: scenario}
	table.Lock()
	if table.rows == nil {
		table.rows = map[string]*row{}
	}
	table.rows[scenario] = r
	table.Unlock()
	t.Cleanup(func() {
		table.Lock()
		r.failed = t.Failed()
		table.Unlock()
	})
	return r
}

// count fills the row with an outcome (checking it: loss and early delivery
// fail the test) and notes.
func (r *row) count(t *testing.T, o e2etest.Outcome, notes ...string) {
	t.Helper()
	o.Check(t)
	table.Lock()
	r.counted, r.o = true, o
	r.notes = strings.Join(notes, "; ")
	table.Unlock()
}

// printSummary prints the table to stdout (and to the file named by
// CHAOS_SUMMARY_FILE, since go test shows a passing package's output
// only with -v) and reports whether no scenario lost a message or delivered
// one early.
func printSummary() bool {
	table.Lock()
	defer table.Unlock()
	if len(table.rows) == 0 {
		return true
	}
	names := make([]string, 0, len(table.rows))
	for n := range table.rows {
		names = append(names, n)
	}
	sort.Strings(names)

	var b strings.Builder
	ok := true
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "scenario\tmessages\tdelivered\tdead\tlost\tearly\tduplicates\tworst lateness\tresult\tnotes")
	for _, n := range names {
		r := table.rows[n]
		result := "ok"
		if r.failed {
			result = "FAIL"
		}
		if !r.counted {
			fmt.Fprintf(w, "%s\t-\t-\t-\t-\t-\t-\t-\t%s\tdid not finish; %s\n", r.scenario, result, r.notes)
			continue
		}
		o := r.o
		if o.Lost > 0 || o.Early > 0 {
			ok = false
		}
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\n", r.scenario, o.Messages, o.Delivered, o.Dead,
			o.Lost, o.Early, o.Duplicates, o.WorstLateness.Round(time.Millisecond), result, r.notes)
	}
	w.Flush()

	out := "\nchaos summary\n" + b.String()
	fmt.Print(out)
	if path := os.Getenv("CHAOS_SUMMARY_FILE"); path != "" {
		if err := writeFile(path, out); err != nil {
			fmt.Fprintf(os.Stderr, "write chaos summary to %s: %v\n", path, err)
		}
	}
	if !ok {
		fmt.Println("FAIL: a scenario lost messages or delivered one early")
	}
	return ok
}

func writeFile(path, s string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.WriteString(f, s); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
