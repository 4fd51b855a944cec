package queue

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// newFairFixture is a fixture whose topic is a fair envelope topic.
func newFairFixture(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t, FormatEnvelope, 1)
	f.tp.Fair = true
	return f
}

// fairItems are count messages of key, due from at on, 1 ms apart, with
// ids "<key>-<n>" (n zero-padded so ids sort as they fall due).
func fairItems(key string, count int, at float64) []Item {
	items := make([]Item, count)
	for i := range items {
		items[i] = Item{
			Message: Message{ID: fmt.Sprintf("%s-%05d", key, i), Key: key, Body: []byte("x")},
			When:    At(MillisTime(at + float64(i))),
		}
	}
	return items
}

func (f *fixture) scheduleItems(items []Item) {
	f.t.Helper()
	if _, err := f.q.ScheduleBatch(f.ctx, f.tp, items); err != nil {
		f.t.Fatalf("ScheduleBatch: %v", err)
	}
}

// drain claims (and acks) until nothing is due, and returns the decoded
// messages in the order claimed.
func (f *fixture) drain(limit int) []Message {
	f.t.Helper()
	var out []Message
	for range 100_000 {
		c := f.claim(0, limit, time.Minute)
		if len(c.Messages) == 0 {
			return out
		}
		out = append(out, f.decode(c)...)
		if _, err := f.q.Ack(f.ctx, f.tp, 0, members(c)); err != nil {
			f.t.Fatalf("Ack: %v", err)
		}
	}
	f.t.Fatal("drain never ended")
	return nil
}

// decode decodes a claim's messages, in the order claimed.
func (f *fixture) decode(c Claim) []Message {
	f.t.Helper()
	out := make([]Message, 0, len(c.Messages))
	for _, cm := range c.Messages {
		m, err := f.tp.Decode(cm.Member)
		if err != nil {
			f.t.Fatalf("decode %q: %v", cm.Member, err)
		}
		out = append(out, m)
	}
	return out
}

// scheduleBigAndSmall schedules the key "big"'s n messages, due from 10 s
// before now, and one message each of keys k00… (small of them), due 1 s
// before now.
func (f *fixture) scheduleBigAndSmall(now float64, n, small int) {
	f.t.Helper()
	f.scheduleItems(fairItems("big", n, now-10_000))
	var items []Item
	for i := range small {
		items = append(items, fairItems(fmt.Sprintf("k%02d", i), 1, now-1000)...)
	}
	f.scheduleItems(items)
}

// checkKeyOrder fails unless the messages of every key came in id order
// (fairItems' ids sort as they fall due).
func checkKeyOrder(t *testing.T, got []Message) {
	t.Helper()
	last := map[string]string{}
	for _, m := range got {
		if m.ID <= last[m.Key] {
			t.Fatalf("key %q: %s after %s", m.Key, m.ID, last[m.Key])
		}
		last[m.Key] = m.ID
	}
}

// checkFairEmpty fails unless the fair state of slot 0 is gone.
func (f *fixture) checkFairEmpty() {
	f.t.Helper()
	k := f.tp.Keys(0)
	for _, key := range []string{k.FairHeads, k.FairWaiting, k.FairReady, k.FairCount} {
		if n := f.zcard(key); n != 0 {
			f.t.Errorf("%s holds %d entries once nothing is scheduled", key, n)
		}
	}
}

func TestFairClaimServesEveryKeyBeforeABigKeyDrains(t *testing.T) {
	t.Parallel()
	f := newFairFixture(t)
	now := f.redisNow()
	// The big key's 2,000 fall due before any of the 20 others.
	f.scheduleBigAndSmall(now, 2000, 20)

	got := f.drain(10)
	if len(got) != 2020 {
		t.Fatalf("delivered %d, want 2020", len(got))
	}
	seen := map[string]bool{}
	for i, m := range got {
		if seen[m.ID] {
			t.Fatalf("%s delivered twice", m.ID)
		}
		seen[m.ID] = true
		if m.Key != "big" && i >= 40 {
			t.Errorf("key %s delivered as message %d, want within the first 40", m.Key, i+1)
		}
	}
	checkKeyOrder(t, got)
	f.checkFairEmpty()
}

// TestFairClaimReturnsDueMembersInTheOrderTaken: a batch the big key's
// backlog fills carries the small keys' messages near its front, in their
// turns, not after every big message due before them (the forwarder
// publishes a batch in the order returned); within a key, due order.
func TestFairClaimReturnsDueMembersInTheOrderTaken(t *testing.T) {
	t.Parallel()
	f := newFairFixture(t)
	now := f.redisNow()
	f.scheduleBigAndSmall(now, 500, 10)

	c := f.claim(0, 100, time.Minute)
	if len(c.Messages) != 100 {
		t.Fatalf("claimed %d, want a full batch of 100", len(c.Messages))
	}
	got := f.decode(c)
	smalls := 0
	for i, m := range got {
		if m.Key != "big" {
			smalls++
			if i >= 20 {
				t.Errorf("key %s is message %d of the batch, want within the first 20 (its turn)", m.Key, i+1)
			}
		}
	}
	if smalls != 10 {
		t.Errorf("the batch holds %d small keys' messages, want all 10", smalls)
	}
	checkKeyOrder(t, got)
}

// TestFairClaimTakesNothingAheadWhileWhatIsDueFillsIt: a key whose message
// falls due within the look-ahead waits for a claim that what is due does
// not fill, as on a plain topic: claimed ahead in the middle of a backlog,
// it would hold the slot's next claim until it fell due.
func TestFairClaimTakesNothingAheadWhileWhatIsDueFillsIt(t *testing.T) {
	t.Parallel()
	f := newFairFixture(t)
	now := f.redisNow()
	f.scheduleItems(fairItems("big", 150, now-10_000))
	f.scheduleItems(fairItems("soon", 1, now+30_000))
	opts := ClaimOptions{Limit: 100, Lease: time.Minute, Ahead: time.Minute}
	c, err := f.q.ClaimWith(f.ctx, f.tp, 0, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Messages) != 100 {
		t.Fatalf("claimed %d, want a full batch of 100", len(c.Messages))
	}
	for i, m := range c.Messages {
		if m.Score > now {
			t.Fatalf("message %d (score %v) is claimed ahead while due ones fill the claim", i+1, m.Score)
		}
	}
	// The rest of the backlog leaves room: the claim takes it and the
	// message within the look-ahead.
	if c, err = f.q.ClaimWith(f.ctx, f.tp, 0, opts); err != nil {
		t.Fatal(err)
	}
	if len(c.Messages) != 51 {
		t.Errorf("claimed %d, want the 50 due and the one within the look-ahead", len(c.Messages))
	}
}

// TestFairClaimWhoseTurnsRunOutSaysClaimAgain: a claim whose turns are
// spent dropping stale entries (members removed by a raw ZREM) before its
// batch is full reports a next of now, so the scanner claims again at once
// rather than napping its poll interval (a minute with keyspace events)
// while messages are due.
func TestFairClaimWhoseTurnsRunOutSaysClaimAgain(t *testing.T) {
	t.Parallel()
	f := newFairFixture(t)
	now := f.redisNow()
	f.scheduleItems(fairItems("stale", 300, now-10_000))
	if err := f.rdb.ZRemRangeByRank(f.ctx, f.tp.Keys(0).Scheduled, 0, -1).Err(); err != nil {
		t.Fatal(err)
	}
	f.scheduleItems(fairItems("live", 5, now-1000))
	c := f.claim(0, 10, time.Minute)
	if len(c.Messages) >= 10 {
		t.Fatalf("claimed %d: the stale entries did not use the turns up", len(c.Messages))
	}
	if !c.HasNext || MillisTime(c.Next).After(c.Now) {
		t.Fatalf("claimed %d of 10 with messages due: next %v (has %v), want now %v", len(c.Messages), MillisTime(c.Next), c.HasNext, c.Now)
	}
	// Claiming again as told drops the rest and takes live's 5.
	took := len(c.Messages)
	for range 20 {
		if c = f.claim(0, 10, time.Minute); len(c.Messages) == 0 && (!c.HasNext || MillisTime(c.Next).After(c.Now)) {
			break
		}
		took += len(c.Messages)
	}
	if took != 5 {
		t.Errorf("claimed %d in all, want live's 5", took)
	}
}

func TestFairClaimAloneKeyTakesWholeBatches(t *testing.T) {
	t.Parallel()
	f := newFairFixture(t)
	now := f.redisNow()
	f.scheduleItems(fairItems("only", 250, now-5000))
	c := f.claim(0, 100, time.Minute)
	if len(c.Messages) != 100 {
		t.Fatalf("claimed %d, want a full batch of 100", len(c.Messages))
	}
	if c.HasNext {
		t.Errorf("a full batch reports next %v; want none (claim again)", c.Next)
	}
	for i, m := range c.Messages {
		if want := now - 5000 + float64(i); m.Score != want {
			t.Fatalf("message %d has score %v, want %v (due order)", i, m.Score, want)
		}
	}
}

func TestFairClaimNeverTakesFutureMessages(t *testing.T) {
	t.Parallel()
	f := newFairFixture(t)
	now := f.redisNow()
	f.scheduleItems(fairItems("a", 2, now-1000))
	f.scheduleItems(fairItems("b", 2, now+60_000))
	f.scheduleItems(fairItems("c", 1, now+120_000))

	c := f.claim(0, 100, time.Minute)
	if diff := cmp.Diff([]string{"a-00000", "a-00001"}, claimedIDs(t, f, c)); diff != "" {
		t.Fatalf("claimed (-want +got):\n%s", diff)
	}
	if !c.HasNext || c.Next != now+60_000 {
		t.Errorf("next = %v (has %v), want %v", c.Next, c.HasNext, now+60_000)
	}
	if c := f.claim(0, 100, time.Minute); len(c.Messages) != 0 {
		t.Errorf("second claim took %v", claimedIDs(t, f, c))
	}
	k := f.tp.Keys(0)
	if n := f.zcard(k.FairWaiting); n != 2 {
		t.Errorf("waiting holds %d keys, want b and c", n)
	}
	if n := f.zcard(k.FairReady); n != 0 {
		t.Errorf("ready holds %d keys, want none", n)
	}
}

func claimedIDs(t *testing.T, f *fixture, c Claim) []string {
	t.Helper()
	var ids []string
	for _, cm := range c.Messages {
		m, err := f.tp.Decode(cm.Member)
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		ids = append(ids, m.ID)
	}
	return ids
}

func TestFairClaimClaimsWhatAPlainZaddWrote(t *testing.T) {
	t.Parallel()
	f := newFairFixture(t)
	now := f.redisNow()
	f.scheduleItems(fairItems("a", 3, now-1000))
	// Written by hand: no fair entry names it.
	f.zadd(0, now-5000, `{"id":"hand","key":"z","body":"x"}`)

	got := f.drain(2)
	var ids []string
	for _, m := range got {
		ids = append(ids, m.ID)
	}
	if diff := cmp.Diff([]string{"hand", "a-00000", "a-00001", "a-00002"}, ids); diff != "" {
		t.Fatalf("delivered (-want +got):\n%s", diff)
	}
	f.checkFairEmpty()
}

func TestFairClaimDropsWhatWasCancelledAndFollowsAMove(t *testing.T) {
	t.Parallel()
	f := newFairFixture(t)
	now := f.redisNow()
	f.scheduleItems(fairItems("a", 3, now-1000))
	f.scheduleItems(fairItems("b", 1, now-900))
	if ok, err := f.q.CancelID(f.ctx, f.tp, "a-00001"); err != nil || !ok {
		t.Fatalf("CancelID = %v, %v", ok, err)
	}
	// a-00002 moved ahead by a plain ZADD of its member.
	moved, err := EncodeEnvelope(Message{ID: "a-00002", Key: "a", Body: []byte("x")})
	if err != nil {
		t.Fatalf("EncodeEnvelope: %v", err)
	}
	if _, ok := f.zscore(f.tp.Keys(0).Scheduled, string(moved)); !ok {
		t.Fatalf("%s is not scheduled", moved)
	}
	f.zadd(0, now+60_000, string(moved))

	got := f.drain(10)
	var ids []string
	for _, m := range got {
		ids = append(ids, m.ID)
	}
	if diff := cmp.Diff([]string{"a-00000", "b-00000"}, ids); diff != "" {
		t.Fatalf("delivered (-want +got):\n%s", diff)
	}
	k := f.tp.Keys(0)
	if n := f.zcard(k.FairHeads); n != 1 {
		t.Errorf("heads hold %d entries, want the moved message's only", n)
	}
	if s, ok := f.zscore(k.FairWaiting, "a"); !ok || s != now+60_000 {
		t.Errorf("key a waits until %v (%v), want %v", s, ok, now+60_000)
	}
}

func TestFairTopicNeedsEnvelopes(t *testing.T) {
	t.Parallel()
	err := Topic{Name: "t", Fair: true}.Validate()
	if err == nil || !strings.Contains(err.Error(), "envelope") {
		t.Errorf("Validate of a fair raw topic = %v, want an error naming the envelope format", err)
	}
	if err := (Topic{Name: "t", Fair: true, Format: FormatEnvelope}).Validate(); err != nil {
		t.Errorf("Validate of a fair envelope topic: %v", err)
	}
}

func TestEnvelopeKeyIsWrittenSecondAndReadBack(t *testing.T) {
	t.Parallel()
	b, err := EncodeEnvelope(Message{ID: "m1", Key: "tenant-7", Body: []byte("hi")})
	if err != nil {
		t.Fatalf("EncodeEnvelope: %v", err)
	}
	if want := `{"id":"m1","key":"tenant-7","body":"hi"}`; string(b) != want {
		t.Errorf("member = %s, want %s", b, want)
	}
	m, err := DecodeEnvelope(b)
	if err != nil || m.Key != "tenant-7" {
		t.Errorf("DecodeEnvelope = %+v, %v; want key tenant-7", m, err)
	}
	if b, _ := EncodeEnvelope(Message{ID: "m1"}); strings.Contains(string(b), "key") {
		t.Errorf("a message without a key encodes as %s", b)
	}
	for _, bad := range []string{strings.Repeat("k", MaxFairKeyLen+1), "a\x00b", "tab\there", "\xff"} {
		if _, err := EncodeEnvelope(Message{ID: "m1", Key: bad}); !errors.Is(err, ErrInvalidEnvelope) {
			t.Errorf("key %q: err = %v, want ErrInvalidEnvelope", bad, err)
		}
	}
	if _, err := DecodeEnvelope([]byte(`{"id":"m1","key":"a\u0000b"}`)); !errors.Is(err, ErrInvalidEnvelope) {
		t.Errorf("decoding a key with NUL: err = %v, want ErrInvalidEnvelope", err)
	}
	if _, err := (Topic{Name: "raw"}).Encode(Message{Key: "k", Body: []byte("b")}); !errors.Is(err, ErrNotEnvelope) {
		t.Errorf("a key on a raw topic: err = %v, want ErrNotEnvelope", err)
	}
}

// checkFairIndex fails unless every scheduled member of slot 0 has its
// entry in the heads at its score and its key is placed (ready or waiting),
// and every key's count is its number of entries.
func (f *fixture) checkFairIndex() {
	f.t.Helper()
	k := f.tp.Keys(0)
	sched, err := f.rdb.ZRangeWithScores(f.ctx, k.Scheduled, 0, -1).Result()
	if err != nil {
		f.t.Fatalf("ZRANGE: %v", err)
	}
	heads, err := f.rdb.ZRange(f.ctx, k.FairHeads, 0, -1).Result()
	if err != nil {
		f.t.Fatalf("ZRANGE: %v", err)
	}
	byMember := map[string]bool{}
	counts := map[string]int{}
	for _, e := range heads {
		key, rest, ok := strings.Cut(e, "\x00")
		if !ok || len(rest) < 8 {
			f.t.Fatalf("malformed entry %q", e)
		}
		byMember[rest[8:]] = true
		counts[key]++
	}
	for _, z := range sched {
		m := z.Member.(string)
		if !byMember[m] {
			f.t.Errorf("scheduled %s has no fair entry", m)
		}
		dm, err := f.tp.Decode(m)
		if err != nil {
			f.t.Fatalf("decode: %v", err)
		}
		_, ready := f.zscore(k.FairReady, dm.Key)
		_, waiting := f.zscore(k.FairWaiting, dm.Key)
		_, paused := f.hget(k.FairPaused, dm.Key)
		if !ready && !waiting && !paused {
			f.t.Errorf("key %q of %s is neither ready nor waiting", dm.Key, dm.ID)
		}
	}
	for key, n := range counts {
		if c, ok := f.zscore(k.FairCount, key); !ok || int(c) != n {
			f.t.Errorf("key %q counts %v (%v), has %d entries", key, c, ok, n)
		}
	}
}

func TestFairStateFollowsRetryReleaseReapRequeueAndReschedule(t *testing.T) {
	t.Parallel()
	f := newFairFixture(t)
	now := f.redisNow()
	f.scheduleItems(fairItems("a", 4, now-1000))
	f.scheduleItems(fairItems("b", 1, now-1000))
	c := f.claim(0, 5, 50*time.Millisecond)
	if len(c.Messages) != 5 {
		t.Fatalf("claimed %d, want 5", len(c.Messages))
	}
	f.checkFairEmpty()
	byID := map[string]string{}
	for _, cm := range c.Messages {
		m, _ := f.tp.Decode(cm.Member)
		byID[m.ID] = cm.Member
	}
	// a-00000 fails and waits a minute; a-00001 goes back unsent; a-00002
	// dies; a-00003 and b-00000 are left to the reaper.
	if _, err := f.q.Retry(f.ctx, f.tp, 0, Failure{Member: byID["a-00000"], Backoff: time.Minute, Reason: "nack"}, 5); err != nil {
		t.Fatalf("Retry: %v", err)
	}
	if _, err := f.q.Release(f.ctx, f.tp, 0, []string{byID["a-00001"]}); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if _, err := f.q.Retry(f.ctx, f.tp, 0, Failure{Member: byID["a-00002"], Permanent: true, Reason: "bad"}, 5); err != nil {
		t.Fatalf("Retry: %v", err)
	}
	f.checkFairIndex()
	time.Sleep(100 * time.Millisecond)
	if r, err := f.q.Reap(f.ctx, f.tp, 0, 100, "0"); err != nil || r.Reaped != 2 {
		t.Fatalf("Reap = %+v, %v; want 2 reaped", r, err)
	}
	f.checkFairIndex()
	if _, err := f.q.Requeue(f.ctx, f.tp, Ref{ID: "a-00002"}); err != nil {
		t.Fatalf("Requeue: %v", err)
	}
	f.checkFairIndex()
	if _, err := f.q.Reschedule(f.ctx, f.tp, Ref{ID: "a-00000"}, At(MillisTime(now-2000))); err != nil {
		t.Fatalf("Reschedule: %v", err)
	}
	f.checkFairIndex()

	got := f.drain(10)
	var ids []string
	for _, m := range got {
		ids = append(ids, m.ID)
	}
	slices.Sort(ids)
	want := []string{"a-00000", "a-00001", "a-00002", "a-00003", "b-00000"}
	if diff := cmp.Diff(want, ids); diff != "" {
		t.Fatalf("delivered (-want +got):\n%s", diff)
	}
	f.checkFairEmpty()
}

func TestFairTopicClaimsARecurrencesTicksAndKeepsItsKey(t *testing.T) {
	t.Parallel()
	f := newFairFixture(t)
	now := f.redisNow()
	f.scheduleItems(fairItems("big", 50, now-60_000))
	f.setPast(Recurrence{ID: "beat", Spec: "@every 30s", Message: Message{Body: []byte("b"), Key: "ops"}}, time.Minute)
	c := f.claim(0, 10, time.Minute)
	var ticks int
	for _, cm := range c.Messages {
		if cm.Tick {
			ticks++
			m, err := f.tp.DecodeClaimed(cm)
			if err != nil || m.Key != "ops" {
				t.Errorf("tick decodes to %+v, %v; want key ops", m, err)
			}
		}
	}
	if ticks != 1 {
		t.Errorf("the first claim holds %d ticks, want the due one", ticks)
	}
}

func TestFairTopicDuplicateWithinTheDedupWindowIsNotIndexed(t *testing.T) {
	t.Parallel()
	f := newFairFixture(t)
	f.tp.DedupWindow = time.Hour
	now := f.redisNow()
	f.scheduleItems(fairItems("a", 1, now-1000))
	if got := f.drain(10); len(got) != 1 {
		t.Fatalf("delivered %d, want 1", len(got))
	}
	rs, err := f.q.ScheduleBatch(f.ctx, f.tp, fairItems("a", 1, now-1000))
	if err != nil || !rs[0].Duplicate {
		t.Fatalf("schedule again = %+v, %v; want a duplicate", rs, err)
	}
	f.checkFairEmpty()
	if got := f.drain(10); len(got) != 0 {
		t.Errorf("delivered %d again", len(got))
	}
}

func TestRegisterRecordsAFairTopicAndItsChange(t *testing.T) {
	t.Parallel()
	f := newFairFixture(t)
	l := LayoutOf(f.tp)
	l.Sink = "amqp"
	plain := l
	plain.Fair = false
	for _, want := range []Layout{plain, l} {
		if _, err := f.q.Register(f.ctx, f.tp.KeyPrefix(), "r1", []Layout{want}); err != nil {
			t.Fatalf("Register: %v", err)
		}
		got, ok, err := f.q.Layout(f.ctx, f.tp.KeyPrefix(), f.tp.Name)
		if err != nil || !ok || got.Fair != want.Fair || got.Topic(f.tp.KeyPrefix()).Fair != want.Fair {
			t.Errorf("registry holds %+v (%v, %v), want fair %v", got, ok, err, want.Fair)
		}
	}
}

// TestFairClaimTakesExactlyItsMembersOutOfTheScheduledSet: a key's turn
// takes its members out of the scheduled set whether they are the set's
// first (one range removal) or lie between another key's (one by one);
// what was not taken stays.
func TestFairClaimTakesExactlyItsMembersOutOfTheScheduledSet(t *testing.T) {
	t.Parallel()
	f := newFairFixture(t)
	now := f.redisNow()
	// a's due times and b's alternate: a-00000 first, then b-00000, …
	items := fairItems("a", 10, now-100)
	for i := range items {
		items[i].When = At(MillisTime(now - 100 + 2*float64(i)))
	}
	bs := fairItems("b", 10, now-99)
	for i := range bs {
		bs[i].When = At(MillisTime(now - 99 + 2*float64(i)))
	}
	f.scheduleItems(append(items, bs...))

	// Turns of 4, 2, 1 and 1: a's four lie between b's in the scheduled set,
	// b's two are then its first, a's fifth lies after b's, b's third is
	// first again.
	c := f.claim(0, 8, time.Minute)
	var ids []string
	for _, m := range f.decode(c) {
		ids = append(ids, m.ID)
	}
	slices.Sort(ids)
	want := []string{"a-00000", "a-00001", "a-00002", "a-00003", "a-00004", "b-00000", "b-00001", "b-00002"}
	if diff := cmp.Diff(want, ids); diff != "" {
		t.Fatalf("claimed (-want +got):\n%s", diff)
	}
	left, err := f.rdb.ZRange(f.ctx, f.tp.Keys(0).Scheduled, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	var leftIDs []string
	for _, m := range left {
		msg, err := f.tp.Decode(m)
		if err != nil {
			t.Fatal(err)
		}
		leftIDs = append(leftIDs, msg.ID)
	}
	slices.Sort(leftIDs)
	var wantLeft []string
	for i := 3; i < 10; i++ {
		if i >= 5 {
			wantLeft = append(wantLeft, fmt.Sprintf("a-%05d", i))
		}
		wantLeft = append(wantLeft, fmt.Sprintf("b-%05d", i))
	}
	slices.Sort(wantLeft)
	if diff := cmp.Diff(wantLeft, leftIDs); diff != "" {
		t.Fatalf("left scheduled (-want +got):\n%s", diff)
	}
	if _, err := f.q.Ack(f.ctx, f.tp, 0, members(c)); err != nil {
		t.Fatal(err)
	}
	if got := f.drain(8); len(got) != 12 {
		t.Fatalf("then delivered %d, want the 12 left", len(got))
	}
	f.checkFairEmpty()
}
