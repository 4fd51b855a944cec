package opstext

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/delaybridge/delaybridge/membership"
	"github.com/delaybridge/delaybridge/queue"
)

func TestSettingNamesTheVariableBehindARefusal(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("schedule dq:{orders:0}: %w: 0 connected", queue.ErrTooFewReplicas), "DELAYBRIDGE_REDIS_WAIT_REPLICAS"},
		{queue.ErrAOFOff, "DELAYBRIDGE_REDIS_WAIT_AOF=true"},
		{fmt.Errorf("topic orders: %w", queue.ErrNotFair), "DELAYBRIDGE_TOPIC_<NAME>_FAIR=true"},
		{errors.Join(errors.New("other"), queue.ErrTooFewReplicas), "DELAYBRIDGE_REDIS_WAIT_REPLICAS"},
		{queue.ErrNotFound, ""},
		{nil, ""},
	} {
		if got := Setting(c.err); got != c.want {
			t.Errorf("Setting(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}

// TestWrapNamesTheSettingOnceAndKeepsTheError: the text gains the variable
// in parentheses at its end, once however often it is wrapped, and
// errors.Is still finds the sentinel.
func TestWrapNamesTheSettingOnceAndKeepsTheError(t *testing.T) {
	err := fmt.Errorf("%w: 1 connected within 10s of lag, 2 asked for", queue.ErrTooFewReplicas)
	w := Wrap(Wrap(err))
	if want := err.Error() + " (DELAYBRIDGE_REDIS_WAIT_REPLICAS)"; w.Error() != want {
		t.Errorf("Wrap(Wrap(err)) = %q, want %q", w, want)
	}
	if !errors.Is(w, queue.ErrTooFewReplicas) {
		t.Errorf("errors.Is(Wrap(err), ErrTooFewReplicas) = false")
	}
	if got := WithSetting(w.Error(), w); got != w.Error() {
		t.Errorf("WithSetting of a text that names the setting = %q, want it unchanged", got)
	}
	plain := errors.New("boom")
	if Wrap(plain) != plain || Wrap(nil) != nil || WithSetting("boom", plain) != "boom" {
		t.Errorf("an error with no setting behind it changed")
	}
}

func TestUnforwardedSaysWhyOnlyWhenLiveReplicasForwardOtherTopics(t *testing.T) {
	f := membership.Forwarding{Live: []string{"r1", "r2"}, Served: map[string][]string{"r1": {"orders"}, "r2": {"orders"}}}
	if got := Unforwarded(f, "orders"); got != "" {
		t.Errorf("Unforwarded(orders) = %q, want \"\": r1 forwards it", got)
	}
	got := Unforwarded(f, "payments")
	for _, part := range []string{"no live replica forwards payments", "(2 live)", "DELAYBRIDGE_TOPICS"} {
		if !strings.Contains(got, part) {
			t.Errorf("Unforwarded(payments) = %q, want it to say %q", got, part)
		}
	}
	if got := Unforwarded(membership.Forwarding{}, "payments"); got != "" {
		t.Errorf("Unforwarded with no live replica = %q, want \"\"", got)
	}
}
