package queue

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// WakeChannel is the Pub/Sub channel, "<prefix>:wake", on which every
// successful schedule, reschedule or requeue announces its due time, so a
// scanner sleeping until a later message can look again at once. The payload
// is "<topic>\n<slot>\n<score>" (see Wake). Wake-ups are hints: a lost one only
// delays a message until the scanner's next poll.
func WakeChannel(prefix string) string {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return prefix + ":wake"
}

// Wake is one wake-up: slot Slot of topic Topic holds a message due at Score
// (Unix ms).
type Wake struct {
	Topic string
	Slot  int
	Score float64
}

// Payload is the wake-up as published.
func (w Wake) Payload() string {
	return w.Topic + "\n" + strconv.Itoa(w.Slot) + "\n" + strconv.FormatFloat(w.Score, 'f', -1, 64)
}

// ParseWake reads a payload published on WakeChannel.
func ParseWake(payload string) (Wake, error) {
	parts := strings.Split(payload, "\n")
	if len(parts) != 3 || parts[0] == "" {
		return Wake{}, fmt.Errorf("parse wake-up %q: want <topic>\\n<slot>\\n<score>", payload)
	}
	slot, err := strconv.Atoi(parts[1])
	if err != nil || slot < 0 {
		return Wake{}, fmt.Errorf("parse wake-up %q: bad slot", payload)
	}
	score, err := strconv.ParseFloat(parts[2], 64)
	if err != nil {
		return Wake{}, fmt.Errorf("parse wake-up %q: bad score: %w", payload, err)
	}
	if math.IsNaN(score) {
		return Wake{}, fmt.Errorf("parse wake-up %q: score is not a number", payload)
	}
	return Wake{Topic: parts[0], Slot: slot, Score: score}, nil
}

// wakeArgs are the channel and payload prefix a script publishes for slot.
func (t Topic) wakeArgs(slot int) (channel, prefix string) {
	return WakeChannel(t.Prefix), t.Name + "\n" + strconv.Itoa(slot) + "\n"
}
