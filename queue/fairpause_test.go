package queue

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestAPausedKeyHoldsOnlyThatKey: on a fair topic, PauseKey holds one key's
// due messages while the other keys' go out; a claim that finds only the
// paused key's messages due reports no next score at or before now (the
// scanner does not spin on them); messages scheduled for the key while it
// is paused wait too; ResumeKey delivers them all, in due order.
func TestAPausedKeyHoldsOnlyThatKey(t *testing.T) {
	t.Parallel()
	f := newFairFixture(t)
	now := f.redisNow()
	f.scheduleItems(fairItems("tenant-a", 50, now-1000))
	if ok, err := f.q.PauseKey(f.ctx, f.tp, "tenant-a"); err != nil || !ok {
		t.Fatalf("PauseKey = %v, %v; want true", ok, err)
	}
	if ok, err := f.q.PauseKey(f.ctx, f.tp, "tenant-a"); err != nil || ok {
		t.Fatalf("PauseKey again = %v, %v; want false (paused already)", ok, err)
	}
	f.scheduleItems(fairItems("tenant-b", 5, now-900))
	got := f.drain(10)
	for _, m := range got {
		if m.Key == "tenant-a" {
			t.Fatalf("the paused key's %s was claimed", m.ID)
		}
	}
	if len(got) != 5 {
		t.Fatalf("claimed %d messages of tenant-b, want 5", len(got))
	}
	c := f.claim(0, 10, time.Minute)
	if len(c.Messages) != 0 || (c.HasNext && Millis(c.Now) >= c.Next) {
		t.Errorf("a claim with only the paused key due: %d messages, next %v (has %v) at %v: want none and no next due already",
			len(c.Messages), c.Next, c.HasNext, c.Now)
	}
	later := fairItems("tenant-a", 52, now-500)[50:] // tenant-a-00050, -00051
	f.scheduleItems(later)
	if got := f.drain(10); len(got) != 0 {
		t.Fatalf("claimed %d messages while only the paused key had some due", len(got))
	}
	paused, err := f.q.PausedKeys(f.ctx, f.tp)
	if err != nil || len(paused) != 1 || paused[0].Key != "tenant-a" || paused[0].Since.IsZero() {
		t.Errorf("PausedKeys = %+v, %v", paused, err)
	}
	f.checkFairIndex()

	if ok, err := f.q.ResumeKey(f.ctx, f.tp, "tenant-a"); err != nil || !ok {
		t.Fatalf("ResumeKey = %v, %v; want true", ok, err)
	}
	got = f.drain(10)
	if len(got) != 52 {
		t.Fatalf("after ResumeKey claimed %d messages, want the key's 52", len(got))
	}
	checkKeyOrder(t, got)
	if paused, err := f.q.PausedKeys(f.ctx, f.tp); err != nil || len(paused) != 0 {
		t.Errorf("PausedKeys after resume = %+v, %v", paused, err)
	}
	if ok, err := f.q.ResumeKey(f.ctx, f.tp, "tenant-a"); err != nil || ok {
		t.Errorf("ResumeKey again = %v, %v; want false", ok, err)
	}
	f.checkFairEmpty()
}

// TestPausingAKeyNeedsAFairTopicAndAKey: a topic without fair share keeps
// no turns per key, so PauseKey refuses it (ErrNotFair) and writes
// nothing; an empty key or one longer than a message's key is refused.
func TestPausingAKeyNeedsAFairTopicAndAKey(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatEnvelope, 1)
	if _, err := f.q.PauseKey(f.ctx, f.tp, "k"); !errors.Is(err, ErrNotFair) {
		t.Errorf("PauseKey on a topic without fair share: %v, want ErrNotFair", err)
	}
	if n := f.rdb.Exists(f.ctx, f.tp.Keys(0).FairPaused).Val(); n != 0 {
		t.Error("a refused PauseKey wrote its key")
	}
	f.tp.Fair = true
	for _, key := range []string{"", strings.Repeat("k", MaxFairKeyLen+1)} {
		if _, err := f.q.PauseKey(f.ctx, f.tp, key); err == nil {
			t.Errorf("PauseKey of a %d-byte key: no error", len(key))
		}
	}
}
