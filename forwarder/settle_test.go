package forwarder

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/delaybridge/delaybridge/internal/backoff"
	"github.com/delaybridge/delaybridge/queue"
	"github.com/delaybridge/delaybridge/sinks"
)

func TestOutcomeOfASinkErrorDecidesReleaseAndLabel(t *testing.T) {
	tests := []struct {
		err   error
		label string
		lost  bool
	}{
		{errors.New("broker nacked the message"), "broker", false},
		{sinks.Permanent(errors.New("too large")), "permanent", false},
		{sinks.NotConnected(errors.New("connection reset")), "connection", true},
		{fmt.Errorf("publish: %w", sinks.ErrClosed), "connection", true},
		{fmt.Errorf("wait for broker confirms: %w", context.Canceled), "timeout", true},
		{fmt.Errorf("wait for broker confirms: %w", context.DeadlineExceeded), "timeout", true},
		// A message never dies of its connection.
		{sinks.Permanent(sinks.NotConnected(errors.New("both"))), "connection", true},
	}
	for _, tt := range tests {
		o := outcomeOf(tt.err)
		if o.String() != tt.label || o.lost() != tt.lost {
			t.Errorf("outcomeOf(%q) = %s (lost %v), want %s (lost %v)", tt.err, o, o.lost(), tt.label, tt.lost)
		}
	}
}

func TestSortOutAcksConfirmedReleasesLostAndRetriesRefused(t *testing.T) {
	retry := backoff.Policy{Min: time.Second, Max: 5 * time.Second}
	nack := errors.New("nacked")
	tooLarge := sinks.Permanent(errors.New("too large"))
	dropped := sinks.NotConnected(errors.New("reset"))
	group := []*delivery{
		{ // published: a confirm, a nack on the 3rd attempt, a drop, a permanent refusal
			msgs:     []sinks.Message{{Attempt: 1}, {Attempt: 3}, {Attempt: 1}, {Attempt: 1}},
			members:  []string{"ok", "nacked", "dropped", "large"},
			failures: []queue.Failure{{Member: "garbled", Permanent: true, Reason: "decode"}},
			results:  []error{nil, nack, dropped, tooLarge},
		},
		{ // returned unpublished behind the drop
			unsent:  true,
			msgs:    []sinks.Message{{Attempt: 1}, {Attempt: 1}},
			members: []string{"later1", "later2"},
		},
		{msgs: []sinks.Message{{Attempt: 9}}, members: []string{"ok2"}, results: []error{nil}},
	}
	got := sortOut(group, retry, 10)
	want := settlement{
		acks:     []string{"ok", "ok2"},
		releases: []string{"dropped", "later1", "later2"},
		unsent:   2,
		failures: []queue.Failure{
			{Member: "garbled", Permanent: true, Reason: "decode"},
			{Member: "nacked", Backoff: 4 * time.Second, Reason: nack.Error()},
			{Member: "large", Backoff: time.Second, Permanent: true, Reason: tooLarge.Error()},
		},
		failed: map[outcome]int{outcomeBroker: 1, outcomeConnection: 1, outcomePermanent: 1},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(settlement{})); diff != "" {
		t.Errorf("sortOut (-want +got):\n%s", diff)
	}
}

func TestRetryPolicyDoublesPerFailedAttemptUpToTheMax(t *testing.T) {
	p := retryPolicy(Options{RetryBackoff: time.Second, RetryBackoffMax: 5 * time.Second})
	for failed, want := range map[int]time.Duration{0: time.Second, 1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 4: 5 * time.Second, 60: 5 * time.Second} {
		if got := p.Delay(failed - 1); got != want {
			t.Errorf("after %d failed attempts: %v, want %v", failed, got, want)
		}
	}
}
