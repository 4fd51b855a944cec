package queue

import "testing"

// TestKeyLocatorFindsTheSlotOfEveryKeyOfItsTopics: a slotted topic's keys by
// the layout, an adopted key and its derived keys; nothing for another
// topic, a bad slot or an adopted topic's name in slotted form.
func TestKeyLocatorFindsTheSlotOfEveryKeyOfItsTopics(t *testing.T) {
	l := NewKeyLocator("dq", []Topic{
		{Name: "orders", Prefix: "dq", Slots: 8},
		{Name: "legacy", Prefix: "dq", Key: "delayqueue"},
	})
	for key, want := range map[string]struct {
		p  KeyPlace
		ok bool
	}{
		"dq:{orders:5}":          {KeyPlace{0, 5, ""}, true},
		"dq:{orders:5}:inflight": {KeyPlace{0, 5, ":inflight"}, true},
		"dq:{orders:12}:paused":  {KeyPlace{0, 12, ":paused"}, true}, // stranded beyond the slot count
		"delayqueue":             {KeyPlace{1, 0, ""}, true},
		"{delayqueue}:inflight":  {KeyPlace{1, 0, ":inflight"}, true},
		"dq:{other:1}":           {},
		"dq:{orders:x}":          {},
		"dq:{legacy:0}":          {},
		"dq:orders:1":            {},
	} {
		if p, ok := l.Locate(key); p != want.p || ok != want.ok {
			t.Errorf("Locate(%q) = %+v, %v; want %+v, %v", key, p, ok, want.p, want.ok)
		}
	}
}

// TestEventAddsOnlyForEventsThatMayAddMembers: a ZADD or a key written over
// may add a member; a removal or an expiry cannot.
func TestEventAddsOnlyForEventsThatMayAddMembers(t *testing.T) {
	for ev, want := range map[string]bool{"zadd": true, "zincr": true, "rename_to": true, "zrem": false, "expired": false, "del": false, "hset": false} {
		if got := EventAdds(ev); got != want {
			t.Errorf("EventAdds(%q) = %v, want %v", ev, got, want)
		}
	}
}
