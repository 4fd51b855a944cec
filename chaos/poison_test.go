package chaos

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
	"github.com/delaybridge/delaybridge/queue"
)

// poison is a member that is hard to deliver.
type poison struct {
	name   string
	topic  queue.Topic
	member string
	score  float64
	// body is what a consumer receives if it is published.
	body []byte
}

// lateBehindPoison is how late a message scheduled behind a poison member in
// the same slot may be. A stuck slot shows a lease (30 s) or forever. A
// flowing one waits for what its 8 MiB member costs Redis and the broker,
// measured on the shared 2-core machine (load 9-13):
//   - Redis runs the claim and the ack scripts that carry it, 0.3-1.2 s and
//     0.2-0.5 s (its slow log), as every copy of 8 MiB in a script costs
//     about 0.1 s there; Redis is single-threaded, so the other topic's
//     scripts wait for these and the other way round: up to 3.2 s in all;
//   - RabbitMQ persists, confirms and delivers 8 MiB in 0.6-1.3 s, and the
//     messages queued behind it reach this test's consumer within a
//     millisecond of it: the consumer holds nothing back;
//   - the daemon itself spends about 0.5 s of CPU on the whole scenario
//     (decoding the 8 MiB envelope: 0.2 s).
//
// So up to 4.5 s; the worst measured was 2.8-3.9 s (the summary's notes
// give when each 8 MiB member arrived), and the bound is twice the
// estimate. The scenario runs the plain build: the race detector makes the
// daemon's part ten times longer than in production.
const lateBehindPoison = 9 * time.Second

// Poison members sit among ordinary messages of a raw and of an envelope
// topic, one slot each, all due in the middle of the stream: a member of
// 8 MiB, one that is not UTF-8, envelopes that do not parse, due times of
// -inf and +inf. Each is published or dead-lettered with a reason, and the
// messages behind it in the same slot are delivered on time.
//
// It does not run in parallel with the other scenarios: every script that
// carries an 8 MiB member holds the one shared Redis for 0.3–1.2 s (claim,
// ack, reap sweep), seconds in all, and every other scenario's claims and
// acks wait behind them (kafka-stall-10s once found all its slots 3 s late
// 8 s after its stall ended). As a sequential test it runs before the
// parallel ones resume.
func TestPoisonMembersArePublishedOrDeadLetteredAndDoNotBlockTheirSlot(t *testing.T) {
	r := report(t, "5a poison-members-amqp")
	b := newBridge(t, 1, nil)
	b.binary = plainBinary
	env := queue.Topic{Name: "envelopes", Prefix: b.name, Slots: 1, Format: queue.FormatEnvelope}
	// A queue of its own, so the messages behind each 8 MiB member wait for
	// that one only, not for the other topic's too, at the consumer.
	envMQ := e2etest.NewRabbit(t, b.name+"-envelopes", nil)
	b.set(
		"DELAYBRIDGE_TOPICS", topicName+","+env.Name,
		"DELAYBRIDGE_TOPIC_ENVELOPES_FORMAT", "envelope",
		"DELAYBRIDGE_TOPIC_ENVELOPES_EXCHANGE", envMQ.Exchange,
		"DELAYBRIDGE_TOPIC_ENVELOPES_ROUTING_KEY", envMQ.Queue,
		// The product's heartbeat, not the chaos suite's 1 s TTL (made for
		// failovers, which this scenario has none of): each Redis script
		// that carries an 8 MiB member holds Redis, single-threaded, for
		// 0.3-2 s on a loaded machine, and a 1 s TTL turns that into
		// "heartbeat lost, stopping every scanner" and tens of seconds.
		"DELAYBRIDGE_HEARTBEAT_INTERVAL", "1s",
		"DELAYBRIDGE_HEARTBEAT_TTL", "5s",
	)
	b.mq.Consume(t)
	envMQ.Consume(t)
	deliveries := func() []e2etest.Delivery { return append(b.mq.Deliveries(), envMQ.Deliveries()...) }

	const n = 2000 // even numbers raw, odd ones envelopes
	start := time.Now()
	plan := e2etest.NewPlan(n, start.Add(2*time.Second), 4*time.Second)
	var even, odd []int
	for i := range n {
		if i%2 == 0 {
			even = append(even, i)
		} else {
			odd = append(odd, i)
		}
	}
	plan.Schedule(t, b.rdb, b.topic, e2etest.RawMember, even)
	plan.Schedule(t, b.rdb, env, e2etest.EnvelopeMember, odd)

	poisonDue := start.Add(3 * time.Second).Truncate(time.Millisecond)
	poisons := poisonMembers(t, b.topic, env, float64(poisonDue.UnixMilli()))
	ctx := context.Background()
	for _, p := range poisons {
		if err := b.rdb.ZAdd(ctx, p.topic.Keys(0).Scheduled, redis.Z{Score: p.score, Member: p.member}).Err(); err != nil {
			t.Fatalf("schedule poison %s: %v", p.name, err)
		}
	}
	d := b.start()

	// Poison bodies are not numbered messages: count them apart.
	numbered := func() []e2etest.Delivery {
		var out []e2etest.Delivery
		for _, g := range deliveries() {
			if e2etest.Number(g.Body) >= 0 {
				out = append(out, g)
			}
		}
		return out
	}
	b.settle(plan, numbered, false, 120*time.Second, b.topic, env)
	var fates map[string]string
	e2etest.WaitFor(t, 60*time.Second, "every poison member published or dead-lettered", func() bool {
		fates = poisonFates(t, b, deliveries(), poisons, env)
		return len(fates) == len(poisons)
	})
	stop(t, d)

	_, others := e2etest.DeadNumbers(t, b.rdb, b.topic, env)
	o := plan.Count(numbered(), nil)
	var worstBehind time.Duration
	for i, due := range plan.Due {
		if !due.Before(poisonDue) && !o.First[i].IsZero() {
			worstBehind = max(worstBehind, o.First[i].Sub(due))
		}
	}
	var notes []string
	for _, p := range poisons {
		notes = append(notes, p.name+": "+fates[p.name]+arrivedAfter(deliveries(), p, poisonDue))
	}
	r.count(t, o, fmt.Sprintf("worst lateness behind the poison %s", ms(worstBehind)), strings.Join(notes, ", "))
	for _, p := range poisons {
		t.Logf("poison %s: %s", p.name, fates[p.name])
	}
	if worstBehind > lateBehindPoison {
		t.Errorf("a message due behind the poison members arrived %s late (want ≤ %s)", worstBehind, lateBehindPoison)
	}
	if len(others) != countDead(fates) {
		t.Errorf("dead sets hold %d members that are not numbered messages, %d of them poison", len(others), countDead(fates))
	}
	if o.Duplicates > 0 {
		t.Errorf("%d duplicates without any crash", o.Duplicates)
	}
	b.expectDrained(b.topic, env)
}

func poisonMembers(t *testing.T, raw, env queue.Topic, due float64) []poison {
	t.Helper()
	big := "poison-8MiB:" + strings.Repeat("p", 8<<20)
	binary := "poison-\xff\xfe\xfd-not-utf8-\x00\x80"
	bigEnv, err := queue.EncodeEnvelope(queue.Message{ID: "poison-8MiB", Body: []byte(strings.Repeat("q", 8<<20))})
	if err != nil {
		t.Fatal(err)
	}
	envInf, _ := queue.EncodeEnvelope(queue.Message{ID: "poison-inf", Body: []byte("never")})
	envNegInf, _ := queue.EncodeEnvelope(queue.Message{ID: "poison-neg-inf", Body: []byte("never")})
	return []poison{
		{name: "raw 8MiB", topic: raw, member: big, score: due, body: []byte(big)},
		{name: "raw not UTF-8", topic: raw, member: binary, score: due, body: []byte(binary)},
		{name: "raw -inf", topic: raw, member: "poison-raw-neg-inf", score: math.Inf(-1)},
		{name: "raw +inf", topic: raw, member: "poison-raw-inf", score: math.Inf(1)},
		{name: "envelope 8MiB", topic: env, member: string(bigEnv), score: due, body: []byte(strings.Repeat("q", 8<<20))},
		{name: "envelope truncated", topic: env, member: `{"id":"poison-truncated","body":`, score: due},
		{name: "envelope unknown field", topic: env, member: `{"id":"poison-field","bdy":"x"}`, score: due},
		{name: "envelope not JSON", topic: env, member: "poison: not an envelope", score: due},
		{name: "envelope not UTF-8", topic: env, member: "{\"id\":\"poison-\xff\"}", score: due},
		{name: "envelope -inf", topic: env, member: string(envNegInf), score: math.Inf(-1)},
		{name: "envelope +inf", topic: env, member: string(envInf), score: math.Inf(1)},
	}
}

// poisonFates says, for each poison member that has met its fate, whether it
// was published or dead-lettered and why.
func poisonFates(t *testing.T, b *bridge, got []e2etest.Delivery, poisons []poison, topics ...queue.Topic) map[string]string {
	t.Helper()
	dead := map[string]string{}
	for _, tp := range append([]queue.Topic{b.topic}, topics...) {
		for _, m := range e2etest.DeadSet(t, b.rdb, tp) {
			dead[tp.Name+"\x00"+m.Member] = m.Reason
		}
	}
	fates := map[string]string{}
	for _, p := range poisons {
		if reason, ok := dead[p.topic.Name+"\x00"+p.member]; ok && reason != "" {
			fates[p.name] = "dead-lettered (" + shortReason(reason) + ")"
			continue
		}
		if p.body == nil {
			continue
		}
		for _, g := range got {
			if bytes.Equal(g.Body, p.body) {
				fates[p.name] = "published"
				break
			}
		}
	}
	return fates
}

func countDead(fates map[string]string) int {
	n := 0
	for _, f := range fates {
		if strings.HasPrefix(f, "dead") {
			n++
		}
	}
	return n
}

func shortReason(s string) string {
	if len(s) > 50 {
		return s[:50] + "…"
	}
	return s
}

// arrivedAfter says how long after its due time a big poison member
// arrived, the cost the messages behind it share ("" for the others).
func arrivedAfter(got []e2etest.Delivery, p poison, due time.Time) string {
	if len(p.body) < 1<<20 {
		return ""
	}
	for _, g := range got {
		if bytes.Equal(g.Body, p.body) {
			return " " + ms(g.At.Sub(due)) + " after due"
		}
	}
	return ""
}
