package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
	"github.com/delaybridge/delaybridge/queue"
)

// tickOf splits a tick's message id "<recurrence>@<tick ms>".
func tickOf(id string) (string, bool) {
	i := strings.LastIndexByte(id, '@')
	return id[:max(i, 0)], i > 0
}

// failoverBound is how long after a SIGKILL the killed replica's slots may
// go without deliveries: its heartbeat expires (1 s), its leases expire (1 s)
// and are reaped, the survivors take the slots over.
const failoverBound = 5 * time.Second

// nearKill reports whether t falls from a second before a kill to
// failoverBound after it.
func nearKill(t time.Time, kills []time.Time) bool {
	for _, k := range kills {
		if !t.Before(k.Add(-time.Second)) && !t.After(k.Add(failoverBound)) {
			return true
		}
	}
	return false
}

// 3 replicas, 8 recurrences "@every 1s", a random replica SIGKILLed (and
// replaced) every 6 s for 30 s: no tick is missing outside a failover gap,
// a duplicate only follows a kill and carries the tick's id, none is early.
func TestRecurrencesSurviveReplicasKilledEverySixSeconds(t *testing.T) {
	t.Parallel()
	name := e2etest.Unique(t)
	rdb := e2etest.ConnectRedis(t, name)
	mq := e2etest.NewRabbit(t, name, nil)
	mq.Consume(t)
	vars := mq.TopicVars(name, "recurring", 8)
	vars["DELAYBRIDGE_HEARTBEAT_INTERVAL"] = "200ms"
	vars["DELAYBRIDGE_HEARTBEAT_TTL"] = "1s"
	vars["DELAYBRIDGE_LEASE"] = "1s"
	replicas := []*e2etest.Daemon{startDaemon(t, vars), startDaemon(t, vars), startDaemon(t, vars)}
	topic := queue.Topic{Name: "recurring", Prefix: name, Slots: 8}
	q := queue.New(rdb)
	for i := range 8 {
		r := queue.Recurrence{ID: fmt.Sprintf("r%d", i), Spec: "@every 1s", Message: queue.Message{Body: []byte("tick")}}
		if _, err := q.SetRecurrence(context.Background(), topic, r); err != nil {
			t.Fatal(err)
		}
	}
	begin := time.Now()
	var kills []time.Time
	for time.Since(begin) < 30*time.Second {
		time.Sleep(6 * time.Second)
		i := rand.IntN(len(replicas))
		replicas[i].Kill()
		kills = append(kills, time.Now())
		replicas[i] = startDaemon(t, vars)
	}
	time.Sleep(failoverBound) // the last kill's gap closes
	end := time.Now()
	for _, d := range replicas {
		stop(t, d)
	}
	checkTicksAcrossKills(t, mq.Deliveries(), kills, begin, end)
}

func checkTicksAcrossKills(t *testing.T, got []e2etest.Delivery, kills []time.Time, begin, end time.Time) {
	t.Helper()
	dues := map[string][]time.Time{}
	seen := map[string]bool{}
	dups := 0
	var late []time.Duration
	for _, d := range got {
		rec, ok := tickOf(d.ID)
		if !ok {
			t.Errorf("delivery with id %q is no tick", d.ID)
			continue
		}
		due := time.UnixMilli(d.Due)
		if d.At.Before(due) {
			t.Errorf("tick %s delivered %s early", d.ID, due.Sub(d.At))
		}
		if seen[d.ID] {
			dups++
			if !nearKill(d.At, kills) {
				t.Errorf("tick %s delivered twice, the second time %s after the test began, not after a kill", d.ID, d.At.Sub(begin))
			}
			continue
		}
		seen[d.ID] = true
		dues[rec] = append(dues[rec], due)
		late = append(late, d.At.Sub(due))
	}
	if len(dues) != 8 {
		t.Errorf("ticks of %d recurrences delivered, want 8", len(dues))
	}
	gaps := 0
	for rec, ds := range dues {
		sort.Slice(ds, func(i, j int) bool { return ds[i].Before(ds[j]) })
		for i := 1; i < len(ds); i++ {
			step := ds[i].Sub(ds[i-1])
			if step%time.Second != 0 {
				t.Errorf("%s: ticks %s apart: off the schedule", rec, step)
			}
			for missing := ds[i-1].Add(time.Second); missing.Before(ds[i]); missing = missing.Add(time.Second) {
				gaps++
				if !nearKill(missing, kills) {
					t.Errorf("%s: tick due %s after the start is missing, not in a failover gap", rec, missing.Sub(begin))
				}
			}
		}
		if last := ds[len(ds)-1]; last.Before(end.Add(-2 * time.Second)) {
			t.Errorf("%s: last tick %s before the end", rec, end.Sub(last))
		}
	}
	sort.Slice(late, func(i, j int) bool { return late[i] < late[j] })
	if len(late) > 0 {
		t.Logf("%d kills, %d distinct ticks, %d duplicates, %d ticks skipped in failover gaps; lateness p50 %s, p99 %s, max %s",
			len(kills), len(seen), dups, gaps, late[len(late)/2], late[len(late)*99/100], late[len(late)-1])
	}
}
