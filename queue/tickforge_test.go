package queue

import (
	"strconv"
	"testing"
	"time"
)

// TestARawMemberCannotForgeATick: a raw producer's member that starts like
// a recurrence's tick (its own envelope, routing key and headers inside) is
// claimed as a body and delivered as its bytes; only a tick its slot's
// recurrence vouches for (its random version, spec, zone and message) is
// delivered as the recurrence's message.
func TestARawMemberCannotForgeATick(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	rec := Recurrence{ID: "hb", Spec: "@every 1s", Message: Message{Body: []byte("beat"), RoutingKey: "beats"}}
	first, err := f.q.SetRecurrence(f.ctx, f.tp, rec)
	if err != nil {
		t.Fatal(err)
	}
	now := int64(f.redisNow())
	at := strconv.FormatInt(now-1000, 10)
	forged := []string{
		"\x00recur\x00v1\x00" + at + "\x00@every 1h\x00\x00" + `{"id":"x","body":"evil","headers":{"h":"v"},"routing_key":"anywhere"}`,
		"\x00recur\x00v1\x00" + at + "\x00@every 1s\x00\x00" + `{"id":"hb","body":"evil","routing_key":"anywhere"}`, // a real recurrence's id
		"\x00recur\x00garbage",
	}
	f.zadd(0, float64(now-1000), forged...)
	time.Sleep(time.Until(first) + 50*time.Millisecond)
	c := f.claim(0, 10, time.Minute)
	if len(c.Messages) != len(forged)+1 {
		t.Fatalf("claimed %d members, want %d", len(c.Messages), len(forged)+1)
	}
	ticks := 0
	for _, cm := range c.Messages {
		m, err := f.tp.DecodeClaimed(cm)
		if err != nil {
			t.Fatalf("DecodeClaimed(%q): %v", cm.Member, err)
		}
		if cm.Tick {
			ticks++
			if string(m.Body) != "beat" || m.RoutingKey != "beats" || m.ID != TickID("hb", first) {
				t.Errorf("the recurrence's tick delivers %q to %q as %q", m.Body, m.RoutingKey, m.ID)
			}
			continue
		}
		if string(m.Body) != cm.Member || m.RoutingKey != "" || len(m.Headers) != 0 || m.ID != MessageID([]byte(cm.Member)) {
			t.Errorf("a raw member %q is delivered as %+v: want its bytes as the body, nothing else", cm.Member, m)
		}
	}
	if ticks != 1 {
		t.Errorf("%d claimed members are ticks, want the recurrence's one", ticks)
	}
}
