package queue

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func layouts(prefix string) []Layout {
	orders := LayoutOf(Topic{Name: "orders", Prefix: prefix, Slots: 8, Format: FormatEnvelope})
	orders.Sink, orders.Exchange, orders.RoutingKey = "amqp", "events", "orders"
	legacy := LayoutOf(Topic{Name: "legacy", Prefix: prefix, Key: prefix + ":delayqueue"})
	legacy.Sink, legacy.KafkaTopic = "kafka", "legacy-due"
	return []Layout{orders, legacy}
}

func TestRegistryRoundTrip(t *testing.T) {
	f := newFixture(t, FormatRaw, 1)
	prefix := f.tp.Prefix
	want := layouts(prefix)
	changes, err := f.q.Register(f.ctx, prefix, "a", want)
	if err != nil {
		t.Fatalf("Register: %v", err)
	}
	if len(changes) != 2 || changes[0].Replaced || changes[1].Replaced {
		t.Fatalf("changes = %+v, want two new topics", changes)
	}
	got, err := f.q.Layouts(f.ctx, prefix)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]Layout{want[1], want[0]}, got); diff != "" {
		t.Errorf("Layouts (-want +got):\n%s", diff)
	}
	doc := f.rdb.HGet(f.ctx, TopicsKey(prefix), "orders").Val()
	if !strings.Contains(doc, `"version":1`) || !strings.Contains(doc, `"exchange":"events"`) {
		t.Errorf("stored document %s lacks the version or the destination", doc)
	}
	tp, err := f.q.Topic(f.ctx, prefix, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Topic{Name: "orders", Prefix: prefix, Slots: 8, Format: FormatEnvelope}, tp); diff != "" {
		t.Errorf("Topic (-want +got):\n%s", diff)
	}
	all, err := f.q.Topics(f.ctx, prefix)
	if err != nil || len(all) != 2 || all[0].Key != prefix+":delayqueue" {
		t.Errorf("Topics = %+v, %v", all, err)
	}
	if _, err := f.q.Topic(f.ctx, prefix, "nope"); !errors.Is(err, ErrUnknownTopic) {
		t.Errorf("Topic(nope) = %v, want ErrUnknownTopic", err)
	}
	// The same layouts again change nothing; a daemon of one topic leaves
	// the other alone.
	if changes, err := f.q.Register(f.ctx, prefix, "a", want[:1]); err != nil || len(changes) != 0 {
		t.Errorf("Register again = %+v, %v; want no change", changes, err)
	}
	if n := f.rdb.HLen(f.ctx, TopicsKey(prefix)).Val(); n != 2 {
		t.Errorf("registry holds %d topics, want 2", n)
	}
}

func TestScheduleRefusesSettingsThatDisagreeWithTheRegistry(t *testing.T) {
	f := newFixture(t, FormatEnvelope, 4) // the producer thinks 4 slots
	if _, err := f.q.Register(f.ctx, f.tp.Prefix, "a", layouts(f.tp.Prefix)); err != nil {
		t.Fatal(err)
	}
	_, err := f.q.Schedule(f.ctx, f.tp, Message{ID: "x", Body: []byte("b")}, In(time.Hour))
	if !errors.Is(err, ErrLayoutMismatch) {
		t.Fatalf("Schedule = %v, want ErrLayoutMismatch", err)
	}
	for _, s := range []string{"slots=4", "slots=8 format=envelope sink=amqp exchange=events"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not name %q", err, s)
		}
	}
	_, err = f.q.ScheduleBatch(f.ctx, f.tp, []Item{{Message: Message{ID: "y"}}})
	if !errors.Is(err, ErrLayoutMismatch) {
		t.Errorf("ScheduleBatch = %v, want ErrLayoutMismatch", err)
	}
	// Every producer call checks as Schedule does: Reschedule reported "no
	// such message" and CancelID false without an error.
	if _, err := f.q.Reschedule(f.ctx, f.tp, ByID("x"), In(time.Hour)); !errors.Is(err, ErrLayoutMismatch) {
		t.Errorf("Reschedule = %v, want ErrLayoutMismatch", err)
	}
	if _, err := f.q.CancelID(f.ctx, f.tp, "x"); !errors.Is(err, ErrLayoutMismatch) {
		t.Errorf("CancelID = %v, want ErrLayoutMismatch", err)
	}
	if _, err := f.q.Cancel(f.ctx, f.tp, []byte(`{"id":"x","body":"b"}`)); !errors.Is(err, ErrLayoutMismatch) {
		t.Errorf("Cancel = %v, want ErrLayoutMismatch", err)
	}
	if _, err := f.q.Get(f.ctx, f.tp, "x"); !errors.Is(err, ErrLayoutMismatch) {
		t.Errorf("Get = %v, want ErrLayoutMismatch", err)
	}
	raw := f.tp
	raw.Slots, raw.Format = 8, FormatRaw
	if err := f.q.CheckTopic(f.ctx, raw); !errors.Is(err, ErrLayoutMismatch) {
		t.Errorf("CheckTopic(raw) = %v, want ErrLayoutMismatch", err)
	}
	for i := range 8 {
		if n := f.zcard(f.tp.Keys(i).Scheduled); n != 0 {
			t.Errorf("slot %d holds %d messages after a refusal", i, n)
		}
	}
	right, err := f.q.Topic(f.ctx, f.tp.Prefix, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.q.Schedule(f.ctx, right, Message{ID: "x"}, In(time.Hour)); err != nil {
		t.Errorf("Schedule with the registry's layout: %v", err)
	}
	unregistered := Topic{Name: "new", Prefix: f.tp.Prefix, Slots: 2}
	if _, err := f.q.Schedule(f.ctx, unregistered, Message{Body: []byte("b")}, In(time.Hour)); err != nil {
		t.Errorf("Schedule on a topic not registered yet: %v", err)
	}
}

func TestRegisterRefusesAnotherLayoutWhileAReplicaIsLive(t *testing.T) {
	f := newFixture(t, FormatRaw, 1)
	prefix := f.tp.Prefix
	if _, err := f.q.Register(f.ctx, prefix, "a", layouts(prefix)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.q.Heartbeat(f.ctx, prefix, "a", time.Minute); err != nil {
		t.Fatal(err)
	}
	resized := layouts(prefix)
	resized[0].Slots = 4
	// Its own heartbeat (a restart under the same id) is not another replica.
	if _, err := f.q.Heartbeat(f.ctx, prefix, "b", time.Minute); err != nil {
		t.Fatal(err)
	}
	_, err := f.q.Register(f.ctx, prefix, "b", resized)
	if !errors.Is(err, ErrLayoutMismatch) {
		t.Fatalf("Register = %v, want ErrLayoutMismatch", err)
	}
	for _, s := range []string{"registered (slots=8", "configured (slots=4", "live replicas a "} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not name %q", err, s)
		}
	}
	if l, _, _ := f.q.Layout(f.ctx, prefix, "orders"); l.Slots != 8 {
		t.Errorf("registry changed to %s after a refusal", l)
	}
	// A topic the live replica does not know is no conflict.
	extra := LayoutOf(Topic{Name: "extra", Slots: 2})
	if changes, err := f.q.Register(f.ctx, prefix, "b", []Layout{extra}); err != nil || len(changes) != 1 {
		t.Errorf("Register(new topic) = %+v, %v", changes, err)
	}
}

func TestRegisterTakesOverWithoutLiveReplicas(t *testing.T) {
	f := newFixture(t, FormatRaw, 1)
	prefix := f.tp.Prefix
	if _, err := f.q.Register(f.ctx, prefix, "a", layouts(prefix)); err != nil {
		t.Fatal(err)
	}
	// a's heartbeat expired; b is the restarted daemon itself.
	if err := f.rdb.ZAdd(f.ctx, ReplicasKey(prefix), redisZ(f.redisNow()-1, "a"), redisZ(f.redisNow()+60000, "b")).Err(); err != nil {
		t.Fatal(err)
	}
	resized := layouts(prefix)
	resized[0].Slots, resized[0].Exchange = 4, "events2"
	changes, err := f.q.Register(f.ctx, prefix, "b", resized)
	if err != nil {
		t.Fatalf("Register: %v", err)
	}
	want := []Change{{Old: layouts(prefix)[0], Replaced: true, New: resized[0]}}
	if diff := cmp.Diff(want, changes); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	if l, _, _ := f.q.Layout(f.ctx, prefix, "orders"); !l.Same(resized[0]) {
		t.Errorf("registry holds %s, want %s", l, resized[0])
	}
}

// A resized topic keeps messages in their old slots: lookups by id or
// member still find them there.
func TestLookupsFindMessagesInTheSlotsOfAnotherSlotCount(t *testing.T) {
	for _, resize := range [][2]int{{8, 4}, {4, 16}, {1, 8}} {
		f := newFixture(t, FormatEnvelope, resize[0])
		ids := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
		for _, id := range ids {
			if _, err := f.q.Schedule(f.ctx, f.tp, Message{ID: id}, In(time.Hour)); err != nil {
				t.Fatal(err)
			}
		}
		now := f.tp
		now.Slots = resize[1]
		for i, id := range ids {
			in, err := f.q.Get(f.ctx, now, id)
			if err != nil || in.Slot != f.tp.SlotOfID(id) {
				t.Errorf("%v: Get(%s) = slot %d, %v; want slot %d", resize, id, in.Slot, err, f.tp.SlotOfID(id))
			}
			switch i % 3 {
			case 0:
				if ok, err := f.q.CancelID(f.ctx, now, id); !ok || err != nil {
					t.Errorf("%v: CancelID(%s) = %v, %v", resize, id, ok, err)
				}
			case 1:
				if r, err := f.q.Reschedule(f.ctx, now, ByID(id), In(2*time.Hour)); err != nil || r.Slot != f.tp.SlotOfID(id) {
					t.Errorf("%v: Reschedule(%s) = %+v, %v", resize, id, r, err)
				}
			}
		}
		if _, err := f.q.Get(f.ctx, now, "never"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get(never) = %v, want ErrNotFound", err)
		}
	}
}

func TestCancelRawMemberInTheSlotOfAnotherSlotCount(t *testing.T) {
	f := newFixture(t, FormatRaw, 8)
	for i := range 16 {
		if _, err := f.q.ScheduleMember(f.ctx, f.tp, []byte{'m', byte('a' + i)}, In(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	now := f.tp
	now.Slots = 2
	for i := range 16 {
		if ok, err := f.q.Cancel(f.ctx, now, []byte{'m', byte('a' + i)}); !ok || err != nil {
			t.Errorf("Cancel(m%c) = %v, %v", 'a'+i, ok, err)
		}
	}
}
