package e2etest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
