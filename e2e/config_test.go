package e2e

import (
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"testing"

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
