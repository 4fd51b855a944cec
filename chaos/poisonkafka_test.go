package chaos

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
)

// brokerMaxBytes is the Kafka broker's message.max.bytes in the Kafka poison
// scenario: far below the sink's own 1 MiB limit, so the broker, not the
// sink, refuses a record of half a megabyte.
const brokerMaxBytes = 100 << 10

// Poison members on a Kafka topic: one over the sink's 1 MiB limit (refused
// before it is written), one of 512 KiB that the broker refuses
// (MESSAGE_TOO_LARGE refuses the whole produce batch: the sink must resend
// its records one by one to find the culprit), one that is not UTF-8, and
// due times of ±inf. The good records of the refused batch are written, the
// big ones dead-lettered with the reason, and the slot keeps flowing.
func TestKafkaPoisonMembersArePublishedOrDeadLetteredAndDoNotBlockTheirSlot(t *testing.T) {
	t.Parallel()
	r := report(t, "5b poison-members-kafka")
	b, _, k := kafkaBridge(t, 1, kfake.BrokerConfigs(map[string]string{"message.max.bytes": fmt.Sprint(brokerMaxBytes)}))
	b.binary = plainBinary

	const n = 1000
	start := time.Now()
	plan := e2etest.NewPlan(n, start.Add(2*time.Second), 4*time.Second)
	plan.Schedule(t, b.rdb, b.topic, e2etest.RawMember, nil)
	poisonDue := start.Add(3 * time.Second).Truncate(time.Millisecond)
	due := float64(poisonDue.UnixMilli())
	over := "poison-9MiB:" + strings.Repeat("k", 9<<20)
	refused := "poison-512KiB:" + strings.Repeat("r", 512<<10)
	binary := "poison-\xff\xfe-not-utf8-\x00"
	poisons := []poison{
		{name: "over the sink's limit", topic: b.topic, member: over, score: due},
		{name: "refused by the broker", topic: b.topic, member: refused, score: due},
		{name: "not UTF-8", topic: b.topic, member: binary, score: due, body: []byte(binary)},
		{name: "-inf", topic: b.topic, member: "poison-neg-inf", score: math.Inf(-1)},
		{name: "+inf", topic: b.topic, member: "poison-inf", score: math.Inf(1)},
	}
	ctx := context.Background()
	for _, p := range poisons {
		if err := b.rdb.ZAdd(ctx, b.topic.Keys(0).Scheduled, redis.Z{Score: p.score, Member: p.member}).Err(); err != nil {
			t.Fatalf("schedule poison %s: %v", p.name, err)
		}
	}
	d := b.start()

	numbered := func() []e2etest.Delivery {
		var out []e2etest.Delivery
		for _, g := range k.Deliveries() {
			if e2etest.Number(g.Body) >= 0 {
				out = append(out, g)
			}
		}
		return out
	}
	b.settle(plan, numbered, false, 120*time.Second)
	var fates map[string]string
	e2etest.WaitFor(t, 60*time.Second, "every poison member published or dead-lettered", func() bool {
		fates = poisonFates(t, b, k.Deliveries(), poisons)
		return len(fates) == len(poisons)
	})
	stop(t, d)

	o := plan.Count(numbered(), nil)
	var worstBehind time.Duration
	for i, due := range plan.Due {
		if !due.Before(poisonDue) && !o.First[i].IsZero() {
			worstBehind = max(worstBehind, o.First[i].Sub(due))
		}
	}
	var notes []string
	for _, p := range poisons {
		notes = append(notes, p.name+": "+fates[p.name])
		t.Logf("poison %s: %s", p.name, fates[p.name])
	}
	r.count(t, o, fmt.Sprintf("broker message.max.bytes %d; worst lateness behind the poison %s", brokerMaxBytes, ms(worstBehind)), strings.Join(notes, ", "))
	if worstBehind > lateBehindPoison {
		t.Errorf("a message due behind the poison members arrived %s late (want ≤ %s)", worstBehind, lateBehindPoison)
	}
	for _, p := range poisons[:2] {
		if !strings.HasPrefix(fates[p.name], "dead") {
			t.Errorf("poison %s: %s, want dead-lettered: Kafka cannot store it", p.name, fates[p.name])
		}
	}
	if o.Duplicates > 0 {
		t.Errorf("%d duplicates: the broker refused the batch as a whole, resending its good records must not repeat one", o.Duplicates)
	}
	b.expectDrained()
}
