package cli

import (
	"context"
	"strings"
	"testing"
)

// TestCheckFailsNamingAMisspeltIntakeQueue: docs/migration.md runs check
// to see that the intake queue exists; with INTAKE_QUEUE misspelt it
// printed ok and exited 0, and only the running daemon found out. It exits
// 1 naming the queue and the variable, and passes once the queue exists.
func TestCheckFailsNamingAMisspeltIntakeQueue(t *testing.T) {
	exchange := uniqueName("dbtest.checkintake.")
	amqpTopicEnv(t, exchange)
	_, bound := declareBound(t, exchange)
	t.Setenv("DELAYBRIDGE_TOPIC_ORDERS_FORMAT", "envelope")
	t.Setenv("DELAYBRIDGE_TOPIC_ORDERS_INTAKE", "amqp")
	t.Setenv("DELAYBRIDGE_TOPIC_ORDERS_INTAKE_QUEUE", bound+".intke")
	e := &cliEnv{t: t, ctx: context.Background()}
	code, out, errs := e.run("", "check")
	if code != exitFail || !strings.Contains(out, "topic orders (amqp): FAILED") ||
		!strings.Contains(out, `"`+bound+`.intke"`) || !strings.Contains(out, "DELAYBRIDGE_TOPIC_ORDERS_INTAKE_QUEUE") {
		t.Fatalf("check with a misspelt intake queue: exit %d, want %d naming the queue and DELAYBRIDGE_TOPIC_ORDERS_INTAKE_QUEUE\nstdout: %s\nstderr: %s", code, exitFail, out, errs)
	}
	t.Setenv("DELAYBRIDGE_TOPIC_ORDERS_INTAKE_QUEUE", bound)
	if code, out, errs := e.run("", "check"); code != exitOK || !strings.Contains(out, "topic orders (amqp): ok") {
		t.Fatalf("check with the intake queue declared: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
}
