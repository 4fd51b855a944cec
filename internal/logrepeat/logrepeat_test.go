package logrepeat

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"
)

type line struct {
	Level string `json:"level"`
	Msg   string `json:"msg"`
	Topic string `json:"topic"`
	Count int    `json:"count"`
	Err   string `json:"err"`
}

func lines(t *testing.T, b *bytes.Buffer) []line {
	t.Helper()
	var out []line
	for _, s := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if s == "" {
			continue
		}
		var l line
		if err := json.Unmarshal([]byte(s), &l); err != nil {
			t.Fatal(err)
		}
		out = append(out, l)
	}
	b.Reset()
	return out
}

// The first occurrence of each topic and kind is written at once, the rest
// of the interval adds up into one line with the count and the latest
// error, written by Flush or by the next occurrence after the interval; a
// key quiet for an interval is written at once again.
func TestRepeatsAreOneLinePerTopicKindAndIntervalWithTheCount(t *testing.T) {
	var b bytes.Buffer
	const every = 50 * time.Millisecond
	r := New(slog.New(slog.NewJSONHandler(&b, nil)), every)
	r.Add(slog.LevelWarn, "a", "refused", 2, "e1")
	r.Add(slog.LevelWarn, "b", "refused", 1, "e1")
	r.Add(slog.LevelInfo, "a", "failed", 1, "x")
	for i := range 100 {
		r.Add(slog.LevelWarn, "a", "refused", 1, "e"+string(rune('0'+i%10)))
	}
	got := lines(t, &b)
	if len(got) != 3 || got[0].Count != 2 || got[1].Topic != "b" || got[2].Level != "INFO" {
		t.Fatalf("first lines %+v, want one per topic and kind at once", got)
	}
	r.Flush(time.Now(), false)
	if got := lines(t, &b); len(got) != 0 {
		t.Fatalf("flush within the interval wrote %+v", got)
	}
	time.Sleep(every)
	r.Add(slog.LevelWarn, "a", "refused", 1, "last") // after the interval: written now, with the rest
	if got := lines(t, &b); len(got) != 1 || got[0].Count != 101 || got[0].Err != "last" {
		t.Fatalf("the interval's line %+v, want one with count 101 and the latest error", got)
	}
	r.Flush(time.Now().Add(every), false) // a and b quiet for an interval: forgotten
	if got := lines(t, &b); len(got) != 0 {
		t.Fatalf("nothing pending, yet flush wrote %+v", got)
	}
	r.Add(slog.LevelWarn, "a", "refused", 1, "again")
	r.Add(slog.LevelWarn, "a", "refused", 3, "again")
	if got := lines(t, &b); len(got) != 1 || got[0].Count != 1 {
		t.Fatalf("after a quiet interval %+v, want the first written at once", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r.Run(ctx) // writes what is pending as it ends
	if got := lines(t, &b); len(got) != 1 || got[0].Count != 3 {
		t.Fatalf("at the end %+v, want the pending count 3", got)
	}
}
