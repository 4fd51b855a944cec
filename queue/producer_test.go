package queue

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/internal/testing/redistest"
)

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
