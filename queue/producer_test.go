package queue

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/internal/testing/redistest"
)

func TestSchedulePutsRawMemberInItsCRC32Slot(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 16)
	due := time.UnixMilli(4102444800000) // 2100-01-01
	for i := range 20 {
		body := fmt.Sprintf(`{"order":%d}`, i)
		r, err := f.q.Schedule(f.ctx, f.tp, Message{Body: []byte(body)}, At(due))
		if err != nil {
			t.Fatal(err)
		}
		want := Slot([]byte(body), 16)
		if r.Slot != want || r.ID != MessageID([]byte(body)) || r.Score != 4102444800000 {
			t.Errorf("receipt %+v, want slot %d", r, want)
		}
		if s, ok := f.zscore(f.tp.Keys(want).Scheduled, body); !ok || s != 4102444800000 {
			t.Errorf("%s not in slot %d at the due time", body, want)
		}
	}
	if _, err := f.q.ScheduleMember(f.ctx, f.tp, []byte("plain"), At(due.Add(time.Hour))); err != nil {
		t.Fatalf("Schedule: %v", err)
	}
	if _, ok := f.zscore(f.tp.Keys(Slot([]byte("plain"), 16)).Scheduled, "plain"); !ok {
		t.Error("Schedule did not write the member")
	}
}

func TestScheduleInCountsFromRedisTime(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	before := f.redisNow()
	r, err := f.q.Schedule(f.ctx, f.tp, Message{Body: []byte("m")}, In(90*time.Second+500*time.Microsecond))
	after := f.redisNow()
	if err != nil {
		t.Fatal(err)
	}
	// 90.0005 s rounds up to 90001 ms, and TIME, read to the millisecond,
	// rounds up too: never early, at most a millisecond later.
	if r.Score < before+90_001 || r.Score > after+90_002 {
		t.Errorf("score %v outside [%v, %v]", r.Score, before+90_001, after+90_002)
	}
	if s, _ := f.zscore(f.tp.Keys(0).Scheduled, "m"); s != r.Score {
		t.Errorf("stored %v, receipt %v", s, r.Score)
	}
}

func TestScheduleRefusesDueTimesThatCannotBeHonoured(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	for name, w := range map[string]When{
		"before 1970":       At(time.Unix(-1, 0)),
		"past 2^53 ms":      At(time.UnixMilli(1<<53 + 2)),
		"delay before 1970": In(-100 * 365 * 24 * time.Hour),
	} {
		_, err := f.q.Schedule(f.ctx, f.tp, Message{Body: []byte(name)}, w)
		if err == nil || !strings.Contains(err.Error(), "honoured") {
			t.Errorf("%s: Schedule(%v) = %v, want a refusal", name, w, err)
		}
		if !errors.Is(err, ErrBadDueTime) {
			t.Errorf("%s: %v does not wrap ErrBadDueTime", name, err)
		}
	}
	if n := f.zcard(f.tp.Keys(0).Scheduled); n != 0 {
		t.Errorf("%d refused messages were written", n)
	}
}

func TestScheduleOnRawTopicRefusesEnvelopeFields(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	_, err := f.q.Schedule(f.ctx, f.tp, Message{ID: "a", Body: []byte("x")}, In(time.Hour))
	if !errors.Is(err, ErrNotEnvelope) {
		t.Errorf("Schedule with id on raw topic = %v, want ErrNotEnvelope", err)
	}
	if _, err := f.q.CancelID(f.ctx, f.tp, "a"); !errors.Is(err, ErrNotEnvelope) {
		t.Errorf("CancelID on raw topic = %v", err)
	}
	if _, err := f.q.Get(f.ctx, f.tp, "a"); !errors.Is(err, ErrNotEnvelope) {
		t.Errorf("Get on raw topic = %v", err)
	}
}

func TestScheduleOnEnvelopeTopicNeedsAValidEnvelope(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatEnvelope, 2)
	if _, err := f.q.Schedule(f.ctx, f.tp, Message{Body: []byte("no id")}, In(time.Hour)); !errors.Is(err, ErrInvalidEnvelope) {
		t.Errorf("no id: %v", err)
	}
	if _, err := f.q.ScheduleMember(f.ctx, f.tp, []byte(`{"order":1}`), At(time.Now())); !errors.Is(err, ErrInvalidEnvelope) {
		t.Errorf("Schedule of a non-envelope member: %v", err)
	}
	member := []byte(`{"id":"hand-written","body":{"order":1},"headers":{"k":"v"}}`)
	if _, err := f.q.ScheduleMember(f.ctx, f.tp, member, At(time.Now().Add(time.Hour))); err != nil {
		t.Fatalf("Schedule of a hand-written envelope: %v", err)
	}
	info, err := f.q.Get(f.ctx, f.tp, "hand-written")
	if err != nil || string(info.Message.Body) != `{"order":1}` || info.Message.Headers["k"] != "v" || info.Member != string(member) {
		t.Errorf("Get = %+v, %v", info, err)
	}
	f.checkIndex()
}

func TestScheduleCarriesBinaryBodies(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatEnvelope, 1)
	body := []byte{0, 1, 2, 0xff, 0xfe, '"', '\\'}
	if _, err := f.q.Schedule(f.ctx, f.tp, Message{ID: "bin", Body: body}, In(-time.Second)); err != nil {
		t.Fatal(err)
	}
	c := f.claim(0, 1, time.Minute)
	m, err := f.tp.Decode(c.Messages[0].Member)
	if err != nil || string(m.Body) != string(body) || m.ID != "bin" {
		t.Errorf("decoded %+v, %v", m, err)
	}
}

func TestSchedulePublishesAWakeUpWithTopicSlotAndScore(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatEnvelope, 8)
	sub := f.rdb.Subscribe(f.ctx, WakeChannel(f.tp.Prefix))
	defer sub.Close()
	if _, err := sub.Receive(f.ctx); err != nil { // the subscription is confirmed
		t.Fatal(err)
	}
	r, err := f.q.Schedule(f.ctx, f.tp, Message{ID: "w", Body: []byte("x")}, In(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	msg, err := sub.ReceiveMessage(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	w, err := ParseWake(msg.Payload)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Wake{Topic: "orders", Slot: r.Slot, Score: r.Score}, w); diff != "" {
		t.Errorf("wake-up (-want +got):\n%s", diff)
	}
	if _, err := f.q.Reschedule(f.ctx, f.tp, ByID("w"), In(time.Second)); err != nil {
		t.Fatal(err)
	}
	msg, err = sub.ReceiveMessage(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if w, _ := ParseWake(msg.Payload); w.Slot != r.Slot || w.Score >= r.Score {
		t.Errorf("reschedule wake-up %+v, want slot %d earlier than %v", w, r.Slot, r.Score)
	}
}

func TestParseWakeReadsWhatIsPublished(t *testing.T) {
	t.Parallel()
	w := Wake{Topic: "orders.eu", Slot: 1023, Score: 1764000000000.5}
	got, err := ParseWake(w.Payload())
	if err != nil || got != w {
		t.Errorf("ParseWake(%q) = %+v, %v", w.Payload(), got, err)
	}
	for _, bad := range []string{"", "orders", "orders\n1", "orders\nx\n1", "orders\n1\nsoon", "\n1\n2", "orders\n1\nNaN"} {
		if _, err := ParseWake(bad); err == nil {
			t.Errorf("ParseWake(%q) accepted it", bad)
		}
	}
}

func TestRescheduleMovesAScheduledMessage(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 4)
	if _, err := f.q.Schedule(f.ctx, f.tp, Message{Body: []byte("m")}, In(time.Hour)); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(48 * time.Hour).Truncate(time.Millisecond)
	r, err := f.q.Reschedule(f.ctx, f.tp, ByMember([]byte("m")), At(at))
	if err != nil || !r.Due().Equal(at) || r.Member != "m" {
		t.Fatalf("Reschedule = %+v, %v", r, err)
	}
	if s, _ := f.zscore(f.tp.Keys(r.Slot).Scheduled, "m"); s != float64(at.UnixMilli()) {
		t.Errorf("score %v", s)
	}
	if _, err := f.q.Reschedule(f.ctx, f.tp, ByMember([]byte("unknown")), In(time.Hour)); !errors.Is(err, ErrNotFound) {
		t.Errorf("Reschedule of unknown = %v, want ErrNotFound", err)
	}
	if _, err := f.q.Reschedule(f.ctx, f.tp, Ref{}, In(time.Hour)); err == nil {
		t.Error("Reschedule of nothing accepted")
	}
}

func TestRescheduleByIDOfMessageWaitingToRetryKeepsAttemptsAndTakesNewDue(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatEnvelope, 1)
	m, _ := f.scheduleNow("a", "x")
	f.claim(0, 1, time.Minute)
	f.q.Retry(f.ctx, f.tp, 0, Failure{Member: m, Backoff: time.Hour}, 5)
	r, err := f.q.Reschedule(f.ctx, f.tp, ByID("a"), In(-time.Second))
	if err != nil {
		t.Fatal(err)
	}
	c := f.claim(0, 1, time.Minute)
	if len(c.Messages) != 1 || c.Messages[0].Attempts != 1 || c.Messages[0].Due != r.Score {
		t.Errorf("claim = %+v, want attempts 1 due %v", c.Messages, r.Score)
	}
	if _, err := f.q.Reschedule(f.ctx, f.tp, ByID("nope"), In(time.Hour)); !errors.Is(err, ErrNotFound) {
		t.Errorf("Reschedule of unknown id = %v", err)
	}
	f.checkIndex()
}

func TestGetReportsScheduledRetryingAndInFlight(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatEnvelope, 4)
	msg := Message{ID: "g", Body: []byte("x"), Headers: map[string]string{"h": "1"}, RoutingKey: "rk"}
	r, err := f.q.Schedule(f.ctx, f.tp, msg, In(-time.Second))
	if err != nil {
		t.Fatal(err)
	}
	info, err := f.q.Get(f.ctx, f.tp, "g")
	if err != nil || info.State != StateScheduled || info.Due != r.Due() || info.Slot != r.Slot {
		t.Fatalf("Get = %+v, %v", info, err)
	}
	if diff := cmp.Diff(msg, info.Message); diff != "" {
		t.Errorf("message (-want +got):\n%s", diff)
	}
	f.claim(r.Slot, 1, time.Minute)
	info, _ = f.q.Get(f.ctx, f.tp, "g")
	if info.State != StateInFlight || info.Due != r.Due() || time.Until(info.LeaseUntil) < 30*time.Second {
		t.Errorf("in flight: %+v", info)
	}
	f.q.Retry(f.ctx, f.tp, r.Slot, Failure{Member: r.Member, Backoff: time.Hour}, 5)
	info, _ = f.q.Get(f.ctx, f.tp, "g")
	if info.State != StateRetrying || info.Attempts != 1 || time.Until(info.Due) < 30*time.Minute {
		t.Errorf("retrying: %+v", info)
	}
	if _, err := f.q.Get(f.ctx, f.tp, "unknown"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get unknown = %v", err)
	}
	if _, err := f.q.Get(f.ctx, f.tp, ""); !errors.Is(err, ErrInvalidEnvelope) {
		t.Errorf("Get empty id = %v", err)
	}
}

func TestScheduleBatchWritesEveryItemInItsSlotAndLaterItemsWin(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatEnvelope, 8)
	var items []Item
	for i := range 2500 {
		items = append(items, Item{Message: Message{ID: fmt.Sprintf("id-%d", i), Body: []byte("v1")}, When: In(time.Hour)})
	}
	items = append(items, Item{Message: Message{ID: "id-7", Body: []byte("v2")}, When: In(2 * time.Hour)})
	rs, err := f.q.ScheduleBatch(f.ctx, f.tp, items)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != len(items) || rs[len(rs)-1].Replaced != ReplacedScheduled {
		t.Fatalf("%d receipts, last %+v", len(rs), rs[len(rs)-1])
	}
	var total int64
	for s := range 8 {
		total += f.zcard(f.tp.Keys(s).Scheduled)
	}
	if total != 2500 {
		t.Errorf("%d scheduled, want 2500", total)
	}
	if info, err := f.q.Get(f.ctx, f.tp, "id-7"); err != nil || string(info.Message.Body) != "v2" {
		t.Errorf("Get id-7 = %+v, %v", info, err)
	}
	f.checkIndex()
}

func TestScheduleBatchWithAnInvalidItemWritesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatEnvelope, 1)
	_, err := f.q.ScheduleBatch(f.ctx, f.tp, []Item{
		{Message: Message{ID: "ok", Body: []byte("x")}},
		{Message: Message{Body: []byte("no id")}},
		{Message: Message{ID: "late", Body: []byte("x")}, When: At(time.Unix(-5, 0))},
	})
	if err == nil || !strings.Contains(err.Error(), "item 1") || !strings.Contains(err.Error(), "item 2") {
		t.Fatalf("ScheduleBatch = %v, want errors naming items 1 and 2", err)
	}
	if n := f.zcard(f.tp.Keys(0).Scheduled); n != 0 {
		t.Errorf("%d written", n)
	}
}

func TestScheduleBatchOfRawMembersWakesEachSlotOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 2)
	sub := f.rdb.Subscribe(f.ctx, WakeChannel(f.tp.Prefix))
	defer sub.Close()
	if _, err := sub.Receive(f.ctx); err != nil {
		t.Fatal(err)
	}
	var items []Item
	for i := range 50 {
		items = append(items, Item{Message: Message{Body: []byte(fmt.Sprint(i))}, When: In(time.Duration(50-i) * time.Minute)})
	}
	rs, err := f.q.ScheduleBatch(f.ctx, f.tp, items)
	if err != nil {
		t.Fatal(err)
	}
	earliest := map[int]float64{}
	for _, r := range rs {
		if e, ok := earliest[r.Slot]; !ok || r.Score < e {
			earliest[r.Slot] = r.Score
		}
	}
	got := map[int]float64{}
	for range earliest {
		msg, err := sub.ReceiveMessage(f.ctx)
		if err != nil {
			t.Fatal(err)
		}
		w, _ := ParseWake(msg.Payload)
		got[w.Slot] = w.Score
	}
	if diff := cmp.Diff(earliest, got); diff != "" {
		t.Errorf("wake-ups (-want +got):\n%s", diff)
	}
}

func TestEvalAllLoadsAScriptRedisDoesNotKnow(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	s := redis.NewScript("-- " + redistest.Suffix() + "\nreturn ARGV[1] .. KEYS[1]")
	cmds, _, err := f.q.evalAll(f.ctx, s, []scriptCall{{keys: []string{"k1"}, args: []any{"a"}}, {keys: []string{"k2"}, args: []any{"b"}}})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"ak1", "bk2"} {
		if got, err := cmds[i].Text(); err != nil || got != want {
			t.Errorf("call %d = %q, %v; want %q", i, got, err, want)
		}
	}
}

// TestInIsNeverShorterThanItsDelay schedules In(1s) many times and checks
// each score against Redis's TIME, to the microsecond, read just before:
// counted from TIME rounded down to the millisecond, a delay would fall due
// up to a millisecond early.
func TestInIsNeverShorterThanItsDelay(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	const delay = time.Second
	for i := range 200 {
		before, err := f.rdb.Time(f.ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		r, err := f.q.ScheduleMember(f.ctx, f.tp, []byte(fmt.Sprintf("m%d", i)), In(delay))
		if err != nil {
			t.Fatal(err)
		}
		if earliest := float64(before.Add(delay).UnixMicro()) / 1000; r.Score < earliest {
			t.Fatalf("In(%v) scheduled at %.3f ms, before TIME+delay %.3f ms", delay, r.Score, earliest)
		}
	}
}

// TestInSinceCountsTheDelayFromSinceOnRedisClock schedules InSince(1s) from
// a moment 300 ms ago: the score is 700 ms after Redis's TIME at the call,
// not 1 s (the wait before the write does not count), and never before
// since + 1 s on Redis's clock (TIME read before since was taken, + 700).
// A delay that has all elapsed is due at once (TIME, as In(0)).
func TestInSinceCountsTheDelayFromSinceOnRedisClock(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	for _, tt := range []struct {
		delay, ago, want time.Duration
	}{
		{time.Second, 300 * time.Millisecond, 700 * time.Millisecond},
		{100 * time.Millisecond, time.Second, 0},
	} {
		before, err := f.rdb.Time(f.ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		since := time.Now().Add(-tt.ago) // keeps the monotonic reading
		r, err := f.q.ScheduleMember(f.ctx, f.tp, []byte("m"+tt.delay.String()), InSince(tt.delay, since))
		if err != nil {
			t.Fatal(err)
		}
		after, err := f.rdb.Time(f.ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		lo := float64(before.Add(tt.want).UnixMicro()) / 1000
		if tt.want == 0 {
			lo = float64(before.UnixMilli()) // due at once: TIME rounded down
		}
		hi := float64(after.Add(tt.want).UnixMilli() + 1)
		if r.Score < lo || r.Score > hi {
			t.Errorf("InSince(%v, %v ago) scheduled at %.0f ms, want %.3f to %.0f (TIME + %v)", tt.delay, tt.ago, r.Score, lo, hi, tt.want)
		}
	}
}
