package queue

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestPausedSlotClaimsNothingAndDoesNotReportAnOverdueNext(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 4)
	now := f.redisNow()
	for s := range 4 {
		f.zadd(s, now-1000, "overdue")
	}
	if err := f.q.Pause(f.ctx, f.tp, "deploy"); err != nil {
		t.Fatal(err)
	}
	for s := range 4 {
		c := f.claim(s, 10, time.Minute)
		if len(c.Messages) != 0 || !c.Paused || c.HasNext {
			t.Errorf("slot %d: claimed %v, paused %v, has next %v; want nothing, paused, no next", s, members(c), c.Paused, c.HasNext)
		}
		if n := f.zcard(f.tp.Keys(s).Scheduled); n != 1 {
			t.Errorf("slot %d: scheduled holds %d, want 1", s, n)
		}
		st, err := f.q.Stats(f.ctx, f.tp, s)
		if err != nil {
			t.Fatal(err)
		}
		if !st.Pause.Paused || st.Pause.Reason != "deploy" || st.Pause.Since.IsZero() {
			t.Errorf("slot %d: stats pause = %+v, want paused for deploy", s, st.Pause)
		}
	}
	n, err := f.q.Resume(f.ctx, f.tp)
	if err != nil || n != 4 {
		t.Fatalf("resume = %d, %v; want 4 slots", n, err)
	}
	for s := range 4 {
		c := f.claim(s, 10, time.Minute)
		if diff := cmp.Diff([]string{"overdue"}, members(c)); diff != "" || c.Paused {
			t.Errorf("slot %d after resume: paused %v, claimed (-want +got):\n%s", s, c.Paused, diff)
		}
	}
	if n, _ := f.q.Resume(f.ctx, f.tp); n != 0 {
		t.Errorf("second resume found %d paused slots, want 0", n)
	}
}

func TestReapReturnsExpiredLeasesWhilePausedAndTheyWaitForResume(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	now := f.redisNow()
	f.zadd(0, now-500, "m")
	if c := f.claim(0, 10, time.Millisecond); len(c.Messages) != 1 {
		t.Fatalf("claimed %v", members(c))
	}
	if err := f.q.Pause(f.ctx, f.tp, ""); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	r, err := f.q.Reap(f.ctx, f.tp, 0, 10, "0")
	if err != nil || r.Reaped != 1 {
		t.Fatalf("reap = %+v, %v; want 1 reaped", r, err)
	}
	if score, ok := f.zscore(f.tp.Keys(0).Scheduled, "m"); !ok || score != now-500 {
		t.Errorf("reaped member at %v (%v), want its due time %v", score, ok, now-500)
	}
	if c := f.claim(0, 10, time.Minute); len(c.Messages) != 0 {
		t.Errorf("claimed %v while paused", members(c))
	}
	if _, err := f.q.Resume(f.ctx, f.tp); err != nil {
		t.Fatal(err)
	}
	if c := f.claim(0, 10, time.Minute); len(c.Messages) != 1 || c.Messages[0].Due != now-500 {
		t.Errorf("after resume claimed %+v, want m due %v", c.Messages, now-500)
	}
}

func TestResumeAnnouncesEverySlotOnTheWakeChannel(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 2)
	ps := f.rdb.Subscribe(f.ctx, WakeChannel(f.tp.Prefix))
	defer ps.Close()
	if _, err := ps.Receive(f.ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.q.Pause(f.ctx, f.tp, "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.q.Resume(f.ctx, f.tp); err != nil {
		t.Fatal(err)
	}
	now := f.redisNow()
	for s := range 2 {
		msg, err := ps.ReceiveMessage(f.ctx)
		if err != nil {
			t.Fatal(err)
		}
		w, err := ParseWake(msg.Payload)
		if err != nil || w.Topic != "orders" || w.Slot != s || w.Score > now {
			t.Errorf("wake-up %+v (%v), want orders slot %d due by now", w, err, s)
		}
	}
}

func TestAdoptedKeyIsPausedInItsOwnHashTag(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	f.tp.Key = f.tp.Prefix + ":legacy"
	if got, want := f.tp.Keys(0).Paused, "{"+f.tp.Key+"}:paused"; got != want {
		t.Fatalf("paused key %q, want %q", got, want)
	}
	f.rdb.ZAdd(f.ctx, f.tp.Key, redisZ(f.redisNow()-10, "old"))
	if err := f.q.Pause(f.ctx, f.tp, "why"); err != nil {
		t.Fatal(err)
	}
	if v, _ := f.rdb.HGetAll(f.ctx, f.tp.Keys(0).Paused).Result(); v["reason"] != "why" || v["since"] == "" {
		t.Errorf("paused key holds %q", v)
	}
	if c := f.claim(0, 10, time.Minute); len(c.Messages) != 0 {
		t.Errorf("claimed %v while paused", members(c))
	}
	f.q.Resume(f.ctx, f.tp)
	if c := f.claim(0, 10, time.Minute); len(c.Messages) != 1 {
		t.Errorf("claimed %v after resume, want old", members(c))
	}
}

// A slot beyond the slot count (stranded by a resize) is drained by the
// daemon like any other: pausing the topic must stop it too.
func TestPauseAndResumeCoverSlotsBeyondTheSlotCount(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 2)
	now := f.redisNow()
	f.zadd(1, now-1000, "in range")
	f.zadd(5, now-1000, "stranded")
	if err := f.q.Pause(f.ctx, f.tp, "migration"); err != nil {
		t.Fatal(err)
	}
	for _, s := range []int{1, 5} {
		if c := f.claim(s, 10, time.Minute); len(c.Messages) != 0 || !c.Paused {
			t.Errorf("slot %d while paused: claimed %v, paused %v; want nothing, paused", s, members(c), c.Paused)
		}
	}
	if got, err := f.q.StrandedSlots(f.ctx, f.tp); err != nil || len(got) != 1 || got[0].Slot != 5 {
		t.Errorf("StrandedSlots while paused = %v, %v; want slot 5 only", got, err)
	}
	n, err := f.q.Resume(f.ctx, f.tp)
	if err != nil || n != 3 {
		t.Fatalf("resume = %d, %v; want 3 slots (0, 1 and the stranded 5)", n, err)
	}
	if c := f.claim(5, 10, time.Minute); len(members(c)) != 1 || c.Paused {
		t.Errorf("stranded slot after resume: claimed %v, paused %v; want its message", members(c), c.Paused)
	}
	if n := f.rdb.Exists(f.ctx, f.tp.Keys(5).Paused).Val(); n != 0 {
		t.Errorf("the stranded slot's paused key is still there after resume")
	}
	// Drained and resumed, the slot leaves no key the next pause would find.
	if n, err := f.q.Ack(f.ctx, f.tp, 5, []string{"stranded"}); err != nil || n != 1 {
		t.Fatalf("ack = %d, %v", n, err)
	}
	if got, err := f.q.slotsBeyond(f.ctx, f.tp); err != nil || len(got) != 0 {
		t.Errorf("slots beyond the count after drain = %v, %v; want none", got, err)
	}
}
