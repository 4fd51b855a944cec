package forwarder

import (
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/membership"
)

func TestNextBeatWakesWhenAnotherReplicasHeartbeatExpires(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	set := func(deadlines map[string]time.Duration) membership.ReplicaSet {
		s := membership.ReplicaSet{Now: now, Deadlines: map[string]time.Time{}}
		for id, d := range deadlines {
			s.Live = append(s.Live, id)
			s.Deadlines[id] = now.Add(d)
		}
		return s
	}
	const interval = 200 * time.Millisecond
	tests := []struct {
		name string
		set  membership.ReplicaSet
		want time.Duration
	}{
		{"alone", set(map[string]time.Duration{"me": time.Second}), interval},
		{"others renew on time", set(map[string]time.Duration{"me": time.Second, "b": 850 * time.Millisecond, "c": 990 * time.Millisecond}), interval},
		{"one stopped renewing", set(map[string]time.Duration{"me": time.Second, "b": 120 * time.Millisecond, "c": 900 * time.Millisecond}), 121 * time.Millisecond},
		{"one expires now", set(map[string]time.Duration{"me": time.Second, "b": 0}), time.Millisecond},
		{"own deadline ignored", set(map[string]time.Duration{"me": 10 * time.Millisecond, "b": 900 * time.Millisecond}), interval},
	}
	for _, tt := range tests {
		if got := nextBeat(tt.set, "me", interval); got != tt.want {
			t.Errorf("%s: next beat in %s, want %s", tt.name, got, tt.want)
		}
	}
}
