package queue

import (
	"strconv"
	"strings"
)

// KeyPlace is where a key belongs: the index of its topic in the list a
// KeyLocator was built from, its slot, and which of the slot's keys it is
// (the part after the slot's base: "" for the scheduled set, ":inflight",
// ":paused", …).
type KeyPlace struct {
	Topic, Slot int
	Suffix      string
}

// KeyLocator finds the topic×slot of a key named in a keyspace
// notification, by the key layout (docs/architecture.md, "Redis key
// layout"): <prefix>:{<topic>:<slot>}<suffix>, or an adopted key and the
// keys derived from it.
type KeyLocator struct {
	prefix string
	topics []Topic
	index  map[string]int // slotted topics' names to their index
}

// NewKeyLocator locates the keys of topics, whose slotted keys start with
// prefix.
func NewKeyLocator(prefix string, topics []Topic) *KeyLocator {
	index := make(map[string]int, len(topics))
	for i, t := range topics {
		if t.Key == "" {
			index[t.Name] = i
		}
	}
	return &KeyLocator{prefix: prefix, topics: topics, index: index}
}

// Locate says where key belongs; false for a key of no topic of l.
func (l *KeyLocator) Locate(key string) (KeyPlace, bool) {
	for ti, t := range l.topics {
		if t.Key == "" {
			continue
		}
		k := t.Keys(0)
		if key == k.Scheduled {
			return KeyPlace{Topic: ti}, true
		}
		if rest, ok := strings.CutPrefix(key, strings.TrimSuffix(k.Inflight, ":inflight")); ok && strings.HasPrefix(rest, ":") {
			return KeyPlace{Topic: ti, Suffix: rest}, true
		}
	}
	rest, ok := strings.CutPrefix(key, l.prefix+":{")
	if !ok {
		return KeyPlace{}, false
	}
	tag, suffix, ok := strings.Cut(rest, "}")
	if !ok {
		return KeyPlace{}, false
	}
	i := strings.LastIndexByte(tag, ':')
	if i < 0 {
		return KeyPlace{}, false
	}
	slot, err := strconv.Atoi(tag[i+1:])
	ti, known := l.index[tag[:i]]
	if err != nil || !known {
		return KeyPlace{}, false
	}
	return KeyPlace{Topic: ti, Slot: slot, Suffix: suffix}, true
}

// EventAdds reports whether a keyspace event (KeyEvent.Event) may have added
// members to the sorted set it names: a scheduled set that gained members
// has a message that may be due before its slot's next wake.
func EventAdds(event string) bool {
	switch event {
	case "zadd", "zincr", "zunionstore", "zinterstore", "zdiffstore", "zrangestore",
		"rename_to", "restore", "copy_to", "move_to":
		return true
	}
	return false
}
