package queue

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestAClaimVerifiesItsTicksInTheSameCall: a claim of a batch that holds a
// recurrence's tick and members forged to look like ticks is one command
// (the claim script), and it marks exactly the tick the recurrence vouches
// for, at its position past the first chunk and past a dead-lettered
// member.
func TestAClaimVerifiesItsTicksInTheSameCall(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	k := f.tp.Keys(0)
	rec := Recurrence{ID: "hb", Spec: "@every 1s", Message: Message{Body: []byte("beat"), RoutingKey: "beats"}}
	first, err := f.q.SetRecurrence(f.ctx, f.tp, rec)
	if err != nil {
		t.Fatal(err)
	}
	waiting, err := f.rdb.ZRange(f.ctx, k.Scheduled, 0, -1).Result()
	if err != nil || len(waiting) != 1 || !IsTick(waiting[0]) {
		t.Fatalf("scheduled set %q, %v: want the recurrence's tick", waiting, err)
	}
	tick := waiting[0]
	parts := strings.SplitN(strings.TrimPrefix(tick, tickPrefix), "\x00", 2)
	now := int64(f.redisNow())
	plain := claimChunk + 44
	var ms []string
	for i := range plain {
		ms = append(ms, fmt.Sprintf("plain-%03d", i))
	}
	f.zadd(0, float64(now-5000), ms...)
	f.zadd(0, math.Inf(-1), "never")
	at := strconv.FormatInt(now-1000, 10)
	forged := []string{
		tickPrefix + "other" + "\x00" + parts[1], // the tick in another version
		tickPrefix + parts[0] + "\x00" + at + "\x00@every 1s\x00\x00" + `{"id":"hb","body":"evil","routing_key":"anywhere"}`,
		tickPrefix + "garbage",
	}
	f.zadd(0, float64(now-1000), forged...)
	time.Sleep(time.Until(first) + 50*time.Millisecond)
	if err := claimScript.Load(f.ctx, f.rdb).Err(); err != nil {
		t.Fatal(err)
	}
	var calls int
	f.rdb.AddHook(countCalls{&calls})
	c := f.claim(0, 1000, time.Minute)
	if calls != 1 {
		t.Errorf("a claim of a batch with ticks sent %d commands, want 1", calls)
	}
	if c.Dead != 1 || len(c.Messages) != plain+len(forged)+1 {
		t.Fatalf("claimed %d members and buried %d, want %d and 1", len(c.Messages), c.Dead, plain+len(forged)+1)
	}
	for i, cm := range c.Messages {
		if want := cm.Member == tick; cm.Tick != want {
			t.Errorf("member %d %q: Tick = %v, want %v", i, cm.Member, cm.Tick, want)
		}
	}
	if last := c.Messages[len(c.Messages)-1]; last.Member != tick {
		t.Errorf("last claimed %q, want the tick (the latest score)", last.Member)
	}
}

// TestAClaimWithoutAVouchedTickRepliesWithNoTickList: the tick list is
// extra reply only for a batch that holds a verified tick.
func TestAClaimWithoutAVouchedTickRepliesWithNoTickList(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	now := f.redisNow()
	f.zadd(0, now-1000, "a", "b", tickPrefix+"v\x001\x00@daily\x00\x00{\"id\":\"x\"}")
	res, err := claimScript.Run(f.ctx, f.rdb, slotKeys(f.tp.Keys(0)), 10, 60000, "0", 0).StringSlice()
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != claimHeader+3*claimFields {
		t.Errorf("reply of %d elements for 3 members and no vouched tick, want %d: %q", len(res), claimHeader+3*claimFields, res)
	}
	c, err := parseClaim(res)
	if err != nil {
		t.Fatal(err)
	}
	for _, cm := range c.Messages {
		if cm.Tick {
			t.Errorf("%q is a tick; no recurrence vouches for it", cm.Member)
		}
	}
}
