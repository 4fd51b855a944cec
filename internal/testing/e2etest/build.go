package e2etest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

// Build compiles cmd/delaybridge into dir and returns the binary's path.
// With race the binary has the race detector: a race in the daemon then
// shows in its log and fails the test that ran it (see Start); it also runs
// several times slower, so timing checks want the plain build. Call it from
// TestMain.
func Build(dir string, race bool) (string, error) {
	name, args := "delaybridge", []string{"build"}
	if race {
		name, args = "delaybridge-race", append(args, "-race")
	}
	bin := filepath.Join(dir, name)
	cmd := exec.Command("go", append(args, "-o", bin, "github.com/delaybridge/delaybridge/cmd/delaybridge")...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build delaybridge (race %v): %w", race, err)
	}
	return bin, nil
}

// Main is the TestMain of a suite that runs the daemon: it builds the race
// binary into a temporary folder and sets *binary to it, runs the tests,
// removes the folder, and fails a passing run that left a goroutine behind
// (goleak). It does not return.
func Main(m *testing.M, binary *string) {
	dir, err := os.MkdirTemp("", "delaybridge-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*binary, err = Build(dir, true)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	// goleak.VerifyTestMain exits without returning: clean up first.
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
