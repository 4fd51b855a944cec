package queue

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Test helpers that read the id index of envelope topics in both layouts
// (see idsLua): the ids HASH (id -> member) and the index's buckets (id ->
// score of a canonical member).

// bucketKey is the index HASH that holds id (bucket in idsLua).
func bucketKey(k SlotKeys, id string) string {
	return k.Index + ":" + strconv.Itoa(idBucket(id))
}

// indexValue mirrors enc in idsLua: what the index holds for a score.
func indexValue(score float64) string {
	if score > -(1<<53) && score < 1<<53 && score == math.Floor(score) {
		if score >= 0 && score < 1<<31 {
			return strconv.FormatFloat(score, 'f', 1, 64)
		}
		return strconv.FormatInt(int64(score), 10)
	}
	return strconv.FormatFloat(score, 'f', -1, 64)
}

// canonicalPrefix mirrors needle in idsLua: the bytes a canonical member of
// id starts with, "" when id holds a character JSON escapes.
func canonicalPrefix(id string) string {
	if strings.ContainsAny(id, `"\`) {
		return ""
	}
	return `{"id":"` + id + `"`
}

// indexEntries reads the index's buckets of a slot: id -> score.
func (f *fixture) indexEntries(slot int) map[string]string {
	f.t.Helper()
	k := f.tp.Keys(slot)
	out := map[string]string{}
	for b := range idBuckets {
		key := k.Index + ":" + strconv.Itoa(b)
		h, err := f.rdb.HGetAll(f.ctx, key).Result()
		if err != nil {
			f.t.Fatalf("HGETALL %s: %v", key, err)
		}
		for id, s := range h {
			if bucketKey(k, id) != key {
				f.t.Errorf("id %q is in bucket %s, want %s", id, key, bucketKey(k, id))
			}
			out[id] = s
		}
	}
	return out
}

// named reads what every id of a slot names, in both layouts: the member, or
// "stale index entry at <score>" when an index entry finds none.
func (f *fixture) named(slot int) map[string]string {
	f.t.Helper()
	k := f.tp.Keys(slot)
	out, err := f.rdb.HGetAll(f.ctx, k.IDs).Result()
	if err != nil {
		f.t.Fatalf("HGETALL %s: %v", k.IDs, err)
	}
	inflight, _ := f.rdb.ZRange(f.ctx, k.Inflight, 0, -1).Result()
	for id, s := range f.indexEntries(slot) {
		if m, ok := out[id]; ok {
			f.t.Errorf("id %q is in both layouts: %s and score %s", id, m, s)
		}
		out[id] = "stale index entry at " + s
		p := canonicalPrefix(id)
		if p == "" {
			continue
		}
		sched, _ := f.rdb.ZRangeWithScores(f.ctx, k.Scheduled, 0, -1).Result()
		var at []string
		for _, z := range sched {
			if m := z.Member.(string); strings.HasPrefix(m, p) && indexValue(z.Score) == s {
				at = append(at, m)
			}
		}
		for _, m := range append(at, inflight...) {
			if strings.HasPrefix(m, p) {
				out[id] = m
				break
			}
		}
	}
	return out
}

// idNames is what id names in slot, in either layout.
func (f *fixture) idNames(slot int, id string) (string, bool) {
	f.t.Helper()
	m, ok := f.named(slot)[id]
	return m, ok
}

func TestEnvelopeIsStoredOnceAndFoundAmongManyOfTheSameScore(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatEnvelope, 1)
	k := f.tp.Keys(0)
	at := time.UnixMilli(int64(f.redisNow()) + 3_600_000)
	// Ids that are prefixes of one another, all due at one instant.
	var items []Item
	for i := range 700 {
		items = append(items, Item{Message: Message{ID: "a" + strconv.Itoa(i), Body: []byte("x")}, When: At(at)})
	}
	if _, err := f.q.ScheduleBatch(f.ctx, f.tp, items); err != nil {
		t.Fatal(err)
	}
	if n, _ := f.rdb.HLen(f.ctx, k.IDs).Result(); n != 0 {
		t.Errorf(":ids holds %d members: canonical envelopes must be stored once", n)
	}
	if n := len(f.indexEntries(0)); n != 700 {
		t.Errorf("the index holds %d ids, want 700", n)
	}
	for _, id := range []string{"a0", "a1", "a10", "a100", "a699", "a7"} {
		info, err := f.q.Get(f.ctx, f.tp, id)
		if err != nil || info.Message.ID != id {
			t.Errorf("Get(%s) = %+v, %v", id, info.Message, err)
		}
	}
	if ok, err := f.q.CancelID(f.ctx, f.tp, "a10"); !ok || err != nil {
		t.Errorf("CancelID(a10) = %v, %v", ok, err)
	}
	if _, err := f.q.Get(f.ctx, f.tp, "a10"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get(a10) after cancel = %v", err)
	}
	if _, err := f.q.Get(f.ctx, f.tp, "a1"); err != nil {
		t.Errorf("Get(a1) after cancelling a10: %v", err)
	}
	if _, err := f.q.Get(f.ctx, f.tp, "a"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get(a), a prefix of every id = %v, want ErrNotFound", err)
	}
	to := at.Add(time.Minute)
	if _, err := f.q.Reschedule(f.ctx, f.tp, ByID("a100"), At(to)); err != nil {
		t.Fatal(err)
	}
	if info, _ := f.q.Get(f.ctx, f.tp, "a100"); !info.Due.Equal(to) {
		t.Errorf("a100 due %v after Reschedule, want %v", info.Due, to)
	}
	if got, want := f.indexEntries(0)["a100"], indexValue(float64(to.UnixMilli())); got != want {
		t.Errorf("index holds %s for a100, want %s", got, want)
	}
	f.checkIndex()
}

func TestIndexTellsApartScoresThatShareTheirRemainder(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatEnvelope, 1)
	base := math.Floor(f.redisNow()) + 3_600_000
	// The index keeps a whole score modulo 2^31 ms: these share it.
	dues := map[string]float64{}
	for id, due := range map[string]float64{"ördér ✓": base, "soon": base, "next month": base + 1<<31, "in a year": base + 15<<31, "fraction": base + 0.25} {
		r, err := f.q.Schedule(f.ctx, f.tp, Message{ID: id, Body: []byte(id)}, At(MillisTime(due)))
		if err != nil {
			t.Fatal(err)
		}
		dues[id] = r.Score
	}
	// Other messages at each of those scores, sorting before and after.
	for i, due := range []float64{base, base + 1<<31, base + 15<<31} {
		for _, id := range []string{"a" + strconv.Itoa(i), "z" + strconv.Itoa(i)} {
			if _, err := f.q.Schedule(f.ctx, f.tp, Message{ID: id}, At(MillisTime(due))); err != nil {
				t.Fatal(err)
			}
		}
	}
	for id, due := range dues {
		info, err := f.q.Get(f.ctx, f.tp, id)
		if err != nil || string(info.Message.Body) != id || math.Abs(Millis(info.Due)-due) > 0.001 {
			t.Errorf("Get(%s) = %s due %v, %v; want due %v", id, info.Message.Body, Millis(info.Due), err, due)
		}
	}
	if ok, err := f.q.CancelID(f.ctx, f.tp, "next month"); !ok || err != nil {
		t.Errorf("CancelID = %v, %v", ok, err)
	}
	for _, id := range []string{"soon", "in a year"} {
		if _, err := f.q.Get(f.ctx, f.tp, id); err != nil {
			t.Errorf("Get(%s) after cancelling another of its remainder: %v", id, err)
		}
	}
	f.checkIndex()
}

func TestCancelOfAFractionalScoreDropsItsIndexEntry(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatEnvelope, 1)
	// 0.1 ms: Go writes the score as 1…0.1, Redis's ZSCORE reads it back with
	// 17 digits; the entry must still be recognised as the member's.
	// (The Go API writes whole milliseconds: the script is called directly.)
	due := strconv.FormatFloat(math.Floor(f.redisNow())+3_600_000, 'f', -1, 64) + ".1"
	if err := scheduleScript.Run(f.ctx, f.rdb, slotKeys(f.tp.Keys(0)), `{"id":"f","body":"x"}`, "f", "at", due, "", "").Err(); err != nil {
		t.Fatal(err)
	}
	if got := f.indexEntries(0)["f"]; got != due {
		t.Fatalf("index holds %q for a score of %s", got, due)
	}
	if ok, err := f.q.CancelID(f.ctx, f.tp, "f"); !ok || err != nil {
		t.Fatalf("CancelID = %v, %v", ok, err)
	}
	if left := f.indexEntries(0); len(left) != 0 {
		t.Errorf("index entries left after the cancel: %v", left)
	}
}
