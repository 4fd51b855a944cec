package queue

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"
)

func TestScheduleEachWritesTheValidItemsAndTellsWhyEachOtherIsNot(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatEnvelope, 4)
	items := []Item{
		{Message: Message{ID: "a", Body: []byte("x")}, When: In(time.Hour)},
		{Message: Message{Body: []byte("no id")}},
		{Message: Message{ID: "b", Body: []byte("x")}, When: At(time.Unix(-5, 0))},
		{Message: Message{ID: "c", Body: []byte("x"), Headers: map[string]string{"x-delaybridge-id": "1"}}},
		{Message: Message{ID: "d", Body: []byte("x")}, When: At(time.UnixMilli(4_000_000_000_000))},
	}
	rs, errs := f.q.ScheduleEach(f.ctx, f.tp, items)
	wantErr := []error{nil, ErrInvalidEnvelope, ErrBadDueTime, ErrInvalidEnvelope, nil}
	for i, want := range wantErr {
		if (want == nil) != (errs[i] == nil) || (want != nil && !errors.Is(errs[i], want)) {
			t.Errorf("item %d: err %v, want %v", i, errs[i], want)
		}
	}
	if rs[4].Score != 4_000_000_000_000 || rs[4].ID != "d" || rs[4].Slot != f.tp.SlotOfID("d") {
		t.Errorf("receipt of d: %+v", rs[4])
	}
	if rs[1] != (Receipt{}) {
		t.Errorf("receipt of an invalid item: %+v", rs[1])
	}
	for _, id := range []string{"a", "d"} {
		if info, err := f.q.Get(f.ctx, f.tp, id); err != nil || info.State != StateScheduled {
			t.Errorf("Get %s = %+v, %v", id, info, err)
		}
	}
	f.checkIndex()
}

func TestScheduleEachSendsOneScriptCallPerSlotAndWakesItOnceForItsEarliest(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatEnvelope, 2)
	sub := f.rdb.Subscribe(f.ctx, WakeChannel(f.tp.Prefix))
	defer sub.Close()
	if _, err := sub.Receive(f.ctx); err != nil {
		t.Fatal(err)
	}
	var calls int
	f.rdb.AddHook(countEvalSha{&calls})
	var items []Item
	for i := range 200 {
		items = append(items, Item{Message: Message{ID: fmt.Sprint(i), Body: []byte("x")}, When: In(time.Duration(300-i) * time.Minute)})
	}
	rs, errs := f.q.ScheduleEach(f.ctx, f.tp, items)
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if calls != 2 {
		t.Errorf("%d EVALSHA for 200 items in 2 slots, want 2", calls)
	}
	earliest := map[int]float64{0: math.Inf(1), 1: math.Inf(1)}
	for _, r := range rs {
		earliest[r.Slot] = min(earliest[r.Slot], r.Score)
	}
	got := map[int]float64{}
	for range 2 {
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

// countEvalSha counts the EVALSHA commands pipelined through a client.
type countEvalSha struct{ n *int }

func (countEvalSha) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (countEvalSha) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (c countEvalSha) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			if cmd.Name() == "evalsha" {
				*c.n++
			}
		}
		return next(ctx, cmds)
	}
}

func TestScheduleBatchScriptRefusesOnlyTheItemWhoseDueTimeCannotBeHonoured(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	channel, prefix := f.tp.wakeArgs(0)
	call := scriptCall{keys: slotKeys(f.tp.Keys(0)), args: []any{channel, prefix, "0",
		"ok", "", "in", "1000",
		"too-far", "", "in", "9007199254740993",
	}}
	cmds, _, err := f.q.evalAll(f.ctx, scheduleBatchScript, []scriptCall{call})
	if err != nil {
		t.Fatal(err)
	}
	res, err := cmds[0].Slice()
	if err != nil {
		t.Fatal(err)
	}
	var ok, bad Receipt
	if err := ok.fillBatch(res[0]); err != nil {
		t.Errorf("ok: %v", err)
	}
	if err := bad.fillBatch(res[1]); !errors.Is(err, ErrBadDueTime) {
		t.Errorf("too-far: %v, want ErrBadDueTime", err)
	}
	if n := f.zcard(f.tp.Keys(0).Scheduled); n != 1 {
		t.Errorf("%d scheduled, want 1", n)
	}
}

func TestScheduleEachFailsEveryItemWhenRedisIsUnreachable(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	defer rdb.Close()
	tp := Topic{Name: "orders", Prefix: "unreachable", Slots: 2, Format: FormatEnvelope}
	_, errs := New(rdb).ScheduleEach(context.Background(), tp, []Item{
		{Message: Message{ID: "a", Body: []byte("x")}},
		{Message: Message{ID: "b", Body: []byte("x")}},
	})
	for i, err := range errs {
		if err == nil || errors.Is(err, ErrInvalidEnvelope) || errors.Is(err, ErrBadDueTime) {
			t.Errorf("item %d: %v, want Redis's error", i, err)
		}
	}
}
