package chaos

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
	"github.com/delaybridge/delaybridge/queue"
)

// intakeGroup is the consumer group of the Kafka intake of topicName.
const intakeGroup = "delaybridge-" + topicName

// Three replicas consume a Kafka intake topic of three partitions in one
// consumer group while a producer writes to it; each is killed with SIGKILL
// in turn, and new ones take their places. The kills come at moments the
// broker sees, one for each way a replica can die holding records: as it
// fetches past its last commit (it read records it did not schedule), as it
// asks to commit (the broker never applies that commit: its records are in
// Redis and not committed) and as the broker applies a commit (its records
// must be in Redis already: an intake that committed first would lose
// them). The group reads again whatever a dead member did not commit, and
// the id (x-delaybridge-id) must make each record one message. So Redis
// never holds a message twice, every record arrives, none before its
// timestamp + x-delay, the group's committed offsets end at the partitions'
// ends, and destination duplicates stay within what killed sinks and
// records read twice can repeat.
//
// Kafka-go's consumer group, as the intake builds it, keeps a SIGKILLed
// member's partitions until its session times out
// (DELAYBRIDGE_KAFKA_SESSION_TIMEOUT, 10 s by default; each dead member's
// partition must be read again within deadPartitionBound), and a member's
// join makes the whole group wait for the dead: the live members stop
// reading at their next heartbeat (every 3 s) and the group reads nothing
// for about that long after a kill. So the three kills
// come a tenth of a second apart and the replacements start after the
// third (a replacement's join would stop the live members, and a later
// kill would catch nothing), and the scenario waits out one session
// timeout, not three.
//
// It does not run in parallel with the other scenarios, for the reason the
// AMQP intake scenario does not: six race-built replicas starting, a
// producer and the broker keep both cores busy at its start.
func TestSIGKILLWhileConsumingAKafkaIntakeSchedulesEveryIDOnce(t *testing.T) {
	began := time.Now()
	r := report(t, "7b intake-kafka-sigkill-3-of-3-at-fetch-and-commit")
	b := newBridge(t, 8, nil).set("DELAYBRIDGE_LEASE", "2s")
	b.topic.Format = queue.FormatEnvelope
	const partitions = 3
	in := newKafkaIntake(t, b.name+".intake", partitions)
	b.set("DELAYBRIDGE_TOPIC_ORDERS_FORMAT", "envelope",
		"DELAYBRIDGE_TOPIC_ORDERS_INTAKE", "kafka",
		"DELAYBRIDGE_TOPIC_ORDERS_INTAKE_KAFKA_TOPIC", in.name,
		"DELAYBRIDGE_KAFKA_BROKERS", in.broker.proxy.Addr())
	b.mq.Consume(t)

	// Delays of 2 to 5 s, as in the AMQP scenario, and for every other
	// record 32 s more: longer than the group takes to read a dead
	// member's records again (its session timeout), so of the records a
	// replica scheduled and died before committing, some are still in
	// Redis when they are read again (the id must make them one message
	// there) and the others were published by then (they arrive twice,
	// with one id and one due time).
	const n = 3000
	const publishFor = 4 * time.Second
	delay := func(i int) time.Duration {
		d := 2*time.Second + time.Duration(i*7919%3000)*time.Millisecond
		if i%2 == 1 {
			d += 32 * time.Second
		}
		return d
	}

	replicas := make([]*e2etest.Daemon, 3)
	clientIDs := make([]string, len(replicas))
	gen := 0
	launch := func(i int) {
		gen++
		id := fmt.Sprintf("%s-r%d-%d", b.name, i, gen)
		// The client id names the replica's group member (kfake makes
		// member ids <client id>-<uuid>): the broker's view of a commit
		// says which replica made it.
		b.set("DELAYBRIDGE_REPLICA_ID", id, "DELAYBRIDGE_KAFKA_CLIENT_ID", id)
		clientIDs[i] = id
		replicas[i] = b.start()
	}
	for i := range replicas {
		launch(i)
	}
	in.waitStable(t, intakeGroup, len(replicas))

	// Watched by number, not id: a record read again under another id
	// would be one message held twice too.
	doubled := &idWatch{key: func(m queue.Message) string { return fmt.Sprintf("message %d", e2etest.Number(m.Body)) }}
	ctx, cancel := context.WithCancel(context.Background())
	waitSampler := sampleEvery(ctx, 250*time.Millisecond, func(ctx context.Context) { doubled.sample(ctx, b.rdb, b.topic) })
	stopSampler := sync.OnceFunc(func() { cancel(); waitSampler() })
	t.Cleanup(stopSampler)

	start := time.Now()
	type result struct {
		sent []record
		err  error
	}
	produced := make(chan result, 1)
	go func() {
		sent, err := in.produce(n, publishFor, delay)
		produced <- result{sent, err}
	}()
	moments := []killMoment{onRead, beforeCommit, onCommit}
	armed := make([]<-chan killEvent, len(moments))
	for i, m := range moments {
		armed[i] = in.watch.killOn(clientIDs[i], m, start.Add(time.Second+time.Duration(i)*100*time.Millisecond), replicas[i].Kill)
	}
	var kills []deadMember
	for i, ch := range armed {
		select {
		case e := <-ch:
			// Until its session times out the dead member's partitions
			// stay its own: what it read and did not commit is still where
			// it left it, and Redis and the destination show which of
			// those records it had scheduled.
			kills = append(kills, deadMember{killEvent: e, held: in.watch.uncommitted(e.clientID), inRedis: scheduledNumbers(t, b)})
		case <-time.After(publishFor + 10*time.Second):
			t.Fatalf("replica %s was not killed %s: the group stopped reading before, so this scenario proves nothing", clientIDs[i], moments[i])
		}
	}
	for i := range replicas {
		launch(i)
	}
	res := <-produced
	if res.err != nil {
		t.Fatalf("produce to the intake topic: %v", res.err)
	}
	// A record's due time is its timestamp + x-delay, both set by the
	// producer: the test knows it to the millisecond.
	plan := &e2etest.Plan{Due: make([]time.Time, n)}
	for i, rec := range res.sent {
		plan.Due[i] = rec.at.Add(delay(i))
	}

	b.settle(plan, b.mq.Deliveries, false, 60*time.Second)
	for _, d := range replicas {
		stop(t, d)
	}
	stopSampler()
	doubled.sample(context.Background(), b.rdb, b.topic)

	all := b.mq.Deliveries()
	notExact := 0
	for _, d := range all {
		if k := e2etest.Number(d.Body); k >= 0 && k < n && d.Due != plan.Due[k].UnixMilli() {
			notExact++
		}
	}
	dues := dueTimesPerMessage(t, plan, all)
	got := checkIntakeDeliveries(t, plan, all)
	o := plan.Count(got, nil)
	again := in.watch.readAgain()
	readTwice := 0
	for _, offs := range again {
		readTwice += len(offs)
	}
	tally := checkKills(t, in.watch, kills, res.sent, again, got)
	// Every duplicate is a message a killed replica's sink had in flight
	// (as in the SIGKILL scenario) or a record the group read twice whose
	// first copy had been published by then.
	bound := len(kills)*b.inflightBound() + readTwice
	r.count(t, o, strings.Join(tally.notes, ", "), fmt.Sprintf("%d of the %d read again while still scheduled arrived once; the group read %d records twice; a dead member's partition read again after %s; Redis sampled %d× (no message twice); duplicate bound %d; %s in all",
		tally.keptOnce, tally.inRedis, readTwice, strings.Join(tally.stalls, ", "), doubled.samples, bound, ms(time.Since(began))))

	if len(doubled.ids) > 0 {
		t.Errorf("Redis held a message twice in the slots' scheduled and in-flight sets (the intake doubled it): %v", doubled.ids)
	}
	if dues > 0 || notExact > 0 {
		t.Errorf("%d messages delivered with two due times, %d deliveries not due at their record's timestamp + x-delay: a record read again is the same message, due when it was", dues, notExact)
	}
	if o.Duplicates > bound {
		t.Errorf("%d duplicates after %d kills, more than %d (each kill can repeat at most %d in-flight messages, plus the %d records read twice)",
			o.Duplicates, len(kills), bound, b.inflightBound(), readTwice)
	}
	if dead := e2etest.DeadSet(t, b.rdb, b.topic); len(dead) > 0 {
		t.Errorf("%d messages dead-lettered, first: %+v", len(dead), dead[0])
	}
	b.expectDrained()
	for slot := range b.topic.SlotCount() {
		if k := b.topic.Keys(slot).IDs; b.rdb.Exists(context.Background(), k).Val() != 0 {
			t.Errorf("%s still exists after everything settled", k)
		}
		if ks := b.rdb.Keys(context.Background(), b.topic.Keys(slot).Index+":*").Val(); len(ks) != 0 {
			t.Errorf("id index buckets %v still exist after everything settled", ks)
		}
	}
	committed, end := in.offsets(t, intakeGroup)
	for p := range int32(partitions) {
		if committed[p] != end[p] || end[p] == 0 {
			t.Errorf("partition %d: the group committed offset %d, the partition ends at %d", p, committed[p], end[p])
		}
	}
	t.Logf("killed replicas held %d records uncommitted, %d of them in Redis; committed offsets %v, end offsets %v; %s in all", tally.held, tally.inRedis, committed, end, ms(time.Since(began)))
}

// deadPartitionBound is the longest a dead member's partition may go
// unread: the daemon's default DELAYBRIDGE_KAFKA_SESSION_TIMEOUT (10 s),
// after which the broker evicts it, and two heartbeat intervals (3 s each)
// for the live members to rejoin and the partition's new owner to fetch.
// Measured 10.0-10.2 s, in CI too; kafka-go's own 30 s default fails it.
const deadPartitionBound = 10*time.Second + 2*3*time.Second

// killTally is what the kills of a Kafka intake caught.
type killTally struct {
	held     int // records read and not committed by a replica when it died
	inRedis  int // of those, in Redis already
	keptOnce int // of those, still in Redis when the group read them again: they arrived once
	notes    []string
	stalls   []string // how long after each kill its partition was read again
}

// checkKills checks what each kill caught: a replica killed on a commit
// had the records of that commit in Redis, one killed on a fetch held
// records it had not committed, one killed before its commit held records
// in Redis it had not committed, and the group read again every record a
// dead member held. sent is where each record went, again what the group
// read twice, got the deliveries.
func checkKills(t *testing.T, w *groupWatch, kills []deadMember, sent []record, again map[int32]map[int64]bool, got []e2etest.Delivery) killTally {
	t.Helper()
	number := map[int32]map[int64]int{}
	for i, rec := range sent {
		if number[rec.partition] == nil {
			number[rec.partition] = map[int64]int{}
		}
		number[rec.partition][rec.offset] = i
	}
	copies := map[int]int{}
	for _, d := range got {
		copies[e2etest.Number(d.Body)]++
	}
	var tally killTally
	for _, k := range kills {
		var missing []int
		for o := k.records.from; o < k.records.to && k.moment != onRead; o++ {
			if i, ok := number[k.records.partition][o]; !ok || !k.inRedis[i] {
				missing = append(missing, i)
			}
		}
		if len(missing) > 0 {
			t.Errorf("replica %s asked to commit %s while %d of its records were not in Redis (first: %v): a kill there loses them",
				k.clientID, k.records, len(missing), missing[:min(10, len(missing))])
		}
		held, inRedis, lateCommit := 0, 0, 0
		for _, s := range k.held {
			// A commit the member sent just before it died is applied
			// after the kill: what it covers was committed (the intake
			// commits what Redis holds), not held; the final count finds
			// any of it lost.
			from := max(s.from, min(s.to, w.committedBy(k.clientID, s.partition)))
			lateCommit += int(from - s.from)
			for off := from; off < s.to; off++ {
				held++
				if i, ok := number[s.partition][off]; ok && k.inRedis[i] {
					inRedis++
					if copies[i] == 1 {
						tally.keptOnce++
					}
				}
				if !again[s.partition][off] {
					t.Errorf("record %d/%d, which replica %s held uncommitted when it died, was not read again", s.partition, off, k.clientID)
				}
			}
		}
		switch {
		case k.moment == onRead && held == 0 && lateCommit == 0:
			t.Errorf("replica %s, killed %s, held no uncommitted record", k.clientID, k.moment)
		case k.moment == beforeCommit && inRedis == 0:
			t.Errorf("replica %s, killed %s, held no record in Redis uncommitted", k.clientID, k.moment)
		}
		tally.held, tally.inRedis = tally.held+held, tally.inRedis+inRedis
		tally.notes = append(tally.notes, fmt.Sprintf("killed %s holding %d uncommitted (%d in Redis; %d more committed as it died)", k.moment, held, inRedis, lateCommit))
		if at := w.fetchedAfter(k.records.partition, k.at); !at.IsZero() {
			tally.stalls = append(tally.stalls, ms(at.Sub(k.at)))
			if d := at.Sub(k.at); d > deadPartitionBound {
				t.Errorf("replica %s's partition %d was read again %s after it died, more than the session timeout and two heartbeats (%s)",
					k.clientID, k.records.partition, ms(d), ms(deadPartitionBound))
			}
		}
	}
	if tally.keptOnce == 0 {
		t.Errorf("of the %d records killed replicas held in Redis uncommitted, none arrived once: none was still scheduled when the group read it again, so the ids were not put to the test", tally.inRedis)
	}
	return tally
}

// deadMember is a killed replica as the Kafka intake's group saw it.
type deadMember struct {
	killEvent
	held    []span       // read, not committed when it died
	inRedis map[int]bool // numbers of the messages scheduled or delivered just after
}

// scheduledNumbers is the numbers of the messages b's topic holds in Redis
// (scheduled or in flight) or that
// arrived at the destination, by body, whatever their ids.
func scheduledNumbers(t *testing.T, b *bridge) map[int]bool {
	t.Helper()
	out := map[int]bool{}
	for slot := range b.topic.SlotCount() {
		k := b.topic.Keys(slot)
		var members []string
		for _, key := range []string{k.Scheduled, k.Inflight} {
			ms, err := b.rdb.ZRange(context.Background(), key, 0, -1).Result()
			if err != nil {
				t.Fatalf("members of %s: %v", key, err)
			}
			members = append(members, ms...)
		}
		for _, m := range members {
			if msg, err := b.topic.Decode(m); err == nil && e2etest.Number(msg.Body) >= 0 {
				out[e2etest.Number(msg.Body)] = true
			}
		}
	}
	for _, d := range b.mq.Deliveries() {
		if i := e2etest.Number(d.Body); i >= 0 {
			out[i] = true
		}
	}
	return out
}
