package e2e

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
)

func TestBadConfigurationExitsTwoNamingEveryProblem(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		vars []string
		want []string
	}{
		{"missing topics", nil, []string{"DELAYBRIDGE_TOPICS"}},
		{"everything wrong at once", []string{
			"DELAYBRIDGE_TOPICS=orders",
			"DELAYBRIDGE_TOPIC_ORDERS_SLOTS=3",
			"DELAYBRIDGE_TOPIC_ORDERS_SINK=carrier-pigeon",
			"DELAYBRIDGE_AMQP_URL=http://guest:s3cret@localhost/",
			"DELAYBRIDGE_BATCH_SIZE=lots",
		}, []string{
			"DELAYBRIDGE_TOPIC_ORDERS_SLOTS", "power of two",
			"DELAYBRIDGE_TOPIC_ORDERS_SINK", "amqp", "kafka",
			"DELAYBRIDGE_AMQP_URL",
			"DELAYBRIDGE_BATCH_SIZE",
		}},
		{"a topic name with a slash", []string{"DELAYBRIDGE_TOPICS=a/b"}, []string{"DELAYBRIDGE_TOPICS", "a/b", "letters, digits"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, sub := range []string{"run", "check"} {
				cmd := exec.Command(binary, sub)
				cmd.Env = append(e2etest.CleanEnv(), c.vars...)
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				err := cmd.Run()
				var exit *exec.ExitError
				if !errors.As(err, &exit) || exit.ExitCode() != 2 {
					t.Fatalf("%s: exit %v, want code 2; stderr:\n%s", sub, err, stderr.String())
				}
				for _, w := range c.want {
					if !strings.Contains(stderr.String(), w) {
						t.Errorf("%s: stderr does not mention %q:\n%s", sub, w, stderr.String())
					}
				}
				if strings.Contains(stderr.String(), "s3cret") {
					t.Errorf("%s: a password leaked:\n%s", sub, stderr.String())
				}
			}
		})
	}
}

// A _FILE variable that names something other than a regular file (a device
// that never ends, a FIFO nobody writes) is a configuration error at once:
// it used to read /dev/zero until the process held a gigabyte, or block on
// the FIFO for ever, deaf to SIGTERM.
func TestSecretFileThatIsNoRegularFileExitsTwoAtOnce(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "password")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	big := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(big, bytes.Repeat([]byte("x"), 64<<10+1), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, path, want string }{
		{"device", "/dev/zero", "not a regular file"},
		{"FIFO", fifo, "not a regular file"},
		{"over 64 KiB", big, "larger than 65536 bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, binary, "check")
			cmd.Env = append(e2etest.CleanEnv(), "DELAYBRIDGE_TOPICS=orders", "DELAYBRIDGE_REDIS_PASSWORD_FILE="+c.path)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			start := time.Now()
			err := cmd.Run()
			took := time.Since(start)
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 2 {
				t.Fatalf("exit %v after %s, want code 2; stderr:\n%s", err, took, stderr.String())
			}
			if took > 2*time.Second {
				t.Errorf("check took %s to refuse it, want under 2s", took)
			}
			for _, w := range []string{"DELAYBRIDGE_REDIS_PASSWORD_FILE", c.want} {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr does not mention %q:\n%s", w, stderr.String())
				}
			}
		})
	}
}
