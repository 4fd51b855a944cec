// Package opstext is what the daemon's surfaces say to people about the
// configuration behind a refusal or a warning: the DELAYBRIDGE_* variable
// to look at. queue and membership report what happened in their own terms,
// which a program using the Go API reads too (it called WithDurability or
// set Topic.Fair, not a variable); the CLI, the console, the HTTP API,
// /readyz, the intakes and the forwarder's logs name the variable from
// here, once. What flow control says is internal/flowtext's.
package opstext

import (
	"errors"
	"fmt"
	"strings"

	"github.com/delaybridge/delaybridge/membership"
	"github.com/delaybridge/delaybridge/queue"
)

// Setting is the configuration behind err, "" when err names none: the
// durability acceptance waits for, or fair share a per-key operation needs.
func Setting(err error) string {
	switch {
	case errors.Is(err, queue.ErrTooFewReplicas):
		return "DELAYBRIDGE_REDIS_WAIT_REPLICAS"
	case errors.Is(err, queue.ErrAOFOff):
		return "DELAYBRIDGE_REDIS_WAIT_AOF=true"
	case errors.Is(err, queue.ErrNotFair):
		return "DELAYBRIDGE_TOPIC_<NAME>_FAIR=true"
	}
	return ""
}

// WithSetting is text (err's, or a part of it) followed by the setting
// behind err in parentheses, when there is one and text does not name it
// already.
func WithSetting(text string, err error) string {
	if s := Setting(err); s != "" && !strings.Contains(text, s) {
		return text + " (" + s + ")"
	}
	return text
}

// Wrap is err with the setting behind it named after its text (once);
// errors.Is and errors.As see err as before. nil stays nil.
func Wrap(err error) error {
	if s := Setting(err); s != "" && !strings.Contains(err.Error(), s) {
		return fmt.Errorf("%w (%s)", err, s)
	}
	return err
}

// Unforwarded says why topic's messages wait for no one, or "" when a live
// replica forwards it (membership.Forwarding.Unforwarded): the warning the
// CLI, the API and the console give when a message is scheduled to it,
// stats beside its overdue figure, and the forwarder's log.
func Unforwarded(f membership.Forwarding, topic string) string {
	if !f.Unforwarded(topic) {
		return ""
	}
	return fmt.Sprintf("no live replica forwards %s: no live daemon (%d live) has %s in its DELAYBRIDGE_TOPICS; its messages wait until one does", topic, len(f.Live), topic)
}
