// Package chaos runs the built delaybridge binary as real processes against
// real Redis, RabbitMQ and a Kafka-protocol broker (kfake), with a fault
// proxy (internal/testing/faultproxy) between them, and breaks things while numbered
// messages fall due: replicas killed with SIGKILL, brokers cut or stalled,
// Redis connections reset or cut, queues that refuse, exchanges that
// vanish, poison members. Each scenario checks by number that nothing was
// lost and nothing arrived early, and counts duplicates. TestMain prints one
// summary table.
//
// The scenarios spend most of their time waiting for due times and for
// faults to last, so they run in parallel (see parallelism below).
package chaos

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
)

// binary is the daemon built with the race detector, so a race in a fault
// path fails the suite; plainBinary is the same without it, for the checks
// of lateness that the race detector's slowdown would distort.
var binary, plainBinary string

// parallelism is how many scenarios run at once unless -test.parallel is
// given: they mostly sleep through due times and faults, so more than
// GOMAXPROCS (go test's default) keep the package well inside its budget
// without crowding the CPU.
const parallelism = 8

func TestMain(m *testing.M) {
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		_ = flag.Set("test.parallel", fmt.Sprint(parallelism))
	}

	dir, err := os.MkdirTemp("", "delaybridge-chaos")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var plainErr error
	built := make(chan struct{})
	go func() {
		defer close(built)
		plainBinary, plainErr = e2etest.Build(dir, false)
	}()
	binary, err = e2etest.Build(dir, true)
	<-built
	if err = errors.Join(err, plainErr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)

	if !printSummary() {
		code = 1
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
