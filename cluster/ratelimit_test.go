package cluster

import (
	"fmt"
	"hash/crc32"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
	"github.com/delaybridge/delaybridge/queue"
)

// The rate-limited topic of TestRateLimitHoldsAcrossReplicas…, beside the
// unlimited topic (the package's "orders", 64 slots).
const (
	campaign      = "campaign"
	campaignSlots = 8
	campaignRate  = 300
)

// TestRateLimitHoldsAcrossReplicasWhileOneIsKilledAndReplaced: three
// replicas share one topic limited to 300/s; 6,000 messages fall due at one
// instant; midway one replica is killed (SIGKILL) and a new one starts. The
// consumer never sees more than the limit + 10 % in any second after the
// first, the whole campaign takes its 20 s within 10 %, nothing is lost or
// early, and an unlimited topic on the same daemons stays on time.
func TestRateLimitHoldsAcrossReplicasWhileOneIsKilledAndReplaced(t *testing.T) {
	prefix := e2etest.Unique(t)
	b := standalone(t, prefix)
	mq := e2etest.NewTransientRabbit(t, prefix+"-orders")
	cq := e2etest.NewTransientRabbit(t, prefix+"-campaign")
	mq.Consume(t)
	cq.Consume(t)
	vars := daemonVars(prefix, mq, 2*time.Second)
	c := "DELAYBRIDGE_TOPIC_CAMPAIGN_"
	maps.Copy(vars, map[string]string{
		"DELAYBRIDGE_TOPICS": topic + "," + campaign,
		c + "SLOTS":          fmt.Sprint(campaignSlots),
		c + "EXCHANGE":       cq.Exchange,
		c + "ROUTING_KEY":    cq.Queue,
		c + "RATE_LIMIT":     fmt.Sprint(campaignRate),
	})

	var ds []*replica
	for _, id := range []string{"replica-a", "replica-b", "replica-c"} {
		ds = append(ds, startReplica(t, b, id, vars))
	}
	waitFair(t, ds, 20*time.Second)
	// The unlimited topic: 3,000 messages over 30 s, each due 1 s after it
	// is written.
	p := newProducer(b.rdb, prefix, 3000)
	p.start(t, p.plan.Len(), 0, 30*time.Second, time.Second)
	// The campaign: 6,000 messages due at one instant, 3 s from now.
	const n = 6000
	due := time.Now().Add(3 * time.Second).Truncate(time.Millisecond)
	plan := e2etest.NewPlan(n, due, 0)
	plan.Schedule(t, b.rdb, queue.Topic{Name: campaign, Prefix: prefix, Slots: campaignSlots}, e2etest.RawMember, nil)

	// Midway through the campaign (due + 10 s of 20), one dies and another
	// takes its place.
	time.Sleep(time.Until(due.Add(10 * time.Second)))
	owners, victim := assignment(ids(ds)), ds[2].id
	killed := time.Now()
	ds[2].Kill()
	t.Logf("killed %s %s after the campaign fell due (%d delivered)", ds[2].id, time.Since(due).Round(time.Millisecond), cq.Received())
	ds = append(ds[:2], startReplica(t, b, "replica-d", vars))
	joined, joinedOwners := time.Now(), assignment(ids(ds))

	e2etest.WaitFor(t, 60*time.Second, fmt.Sprintf("%d campaign messages delivered", n), func() bool { return cq.Distinct() >= n })
	p.wait(t, 60*time.Second)
	e2etest.WaitFor(t, 30*time.Second, "every unlimited message delivered", func() bool { return mq.Distinct() >= p.plan.Len() })
	stopAll(t, ds)

	got := cq.Deliveries()
	slices.SortFunc(got, func(a, b e2etest.Delivery) int { return a.At.Compare(b.At) })
	checkRate(t, got, due)
	plan.Count(got, nil).Check(t)
	o := p.plan.Count(mq.Deliveries(), nil)
	o.Check(t)
	killedLate, joinedLate := victimWindow(owners, victim, killed), victimWindow(joinedOwners, "replica-d", joined)
	checkLateness(t, p.plan, o, func(i int, due time.Time) bool { return killedLate(i, due) || joinedLate(i, due) })
}

// victimWindow tells which messages of the unlimited topic a change of
// replicas made late whatever the limits: those of the slots that moved
// (the killed replica's, the newcomer's) due from a lease before the
// change to the takeover (the heartbeat TTL) and a second more. Their
// lateness is the takeover's (TestThreeReplicas… bounds it).
func victimWindow(owners []string, victim string, killed time.Time) func(i int, due time.Time) bool {
	return func(i int, due time.Time) bool {
		slot := crc32.ChecksumIEEE([]byte(e2etest.RawMember(i))) & (slots - 1)
		return owners[slot] == victim && due.After(killed.Add(-2*time.Second)) && due.Before(killed.Add(heartbeatTTL+time.Second))
	}
}

// checkRate checks the campaign's deliveries (in arrival order) against
// the limit: at most campaignRate + 10 % in every 1-second window that
// starts a second or more after the first delivery (windows start every
// 100 ms), and the whole run within 10 % of n/campaignRate.
func checkRate(t *testing.T, got []e2etest.Delivery, due time.Time) {
	t.Helper()
	first, last := got[0].At, got[len(got)-1].At
	worst, worstAt := 0, time.Duration(0)
	for from := first.Add(time.Second); !from.Add(time.Second).After(last); from = from.Add(100 * time.Millisecond) {
		lo, _ := slices.BinarySearchFunc(got, from, func(d e2etest.Delivery, t time.Time) int { return d.At.Compare(t) })
		hi, _ := slices.BinarySearchFunc(got, from.Add(time.Second), func(d e2etest.Delivery, t time.Time) int { return d.At.Compare(t) })
		if hi-lo > worst {
			worst, worstAt = hi-lo, from.Sub(first)
		}
	}
	perSecond := make([]int, int(last.Sub(first)/time.Second)+1)
	for _, d := range got {
		perSecond[d.At.Sub(first)/time.Second]++
	}
	t.Logf("deliveries per second from the first: %v", perSecond)
	took := last.Sub(first).Seconds()
	rate := float64(len(got)-1) / took
	t.Logf("%d deliveries from %s after the due time over %.2f s: %.0f/s (limit %d/s); worst 1-second window %d, %s after the first delivery",
		len(got), first.Sub(due).Round(time.Millisecond), took, rate, campaignRate, worst, worstAt.Round(100*time.Millisecond))
	if float64(worst) > 1.1*campaignRate {
		t.Errorf("the consumer got %d messages in one second, more than the limit %d + 10 %%", worst, campaignRate)
	}
	if rate < 0.9*campaignRate || rate > 1.1*campaignRate {
		t.Errorf("the long-run rate was %.0f/s, not within 10 %% of the limit %d/s", rate, campaignRate)
	}
}

// checkLateness holds the unlimited topic's lateness p99 to 100 ms, but
// for the messages the kill made late (skip).
func checkLateness(t *testing.T, plan *e2etest.Plan, o e2etest.Outcome, skip func(i int, due time.Time) bool) {
	t.Helper()
	var late []time.Duration
	skipped := 0
	for i, at := range o.First {
		switch {
		case at.IsZero():
		case skip(i, plan.Due[i]):
			skipped++
		default:
			late = append(late, at.Sub(plan.Due[i]))
		}
	}
	t.Logf("%d messages of the slots that moved, due around the kill and the join, are left out", skipped)
	slices.Sort(late)
	p50, p99 := late[len(late)/2], late[len(late)*99/100]
	t.Logf("unlimited topic beside the limited one: lateness p50 %s, p99 %s, max %s", p50.Round(time.Millisecond), p99.Round(time.Millisecond), late[len(late)-1].Round(time.Millisecond))
	if p99 > 100*time.Millisecond {
		t.Errorf("the unlimited topic's lateness p99 was %s, more than 100 ms", p99)
	}
}
