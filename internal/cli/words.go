package cli

import (
	"fmt"
	"time"
)

// plural is n and noun, with an s unless n is 1: "1 topic", "2 topics".
func plural[N int | int64](n N, noun string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// timeLayout is how every command prints a time: RFC 3339 in UTC with
// milliseconds always, so times line up and sort as text
// (2026-11-26T04:34:17.100Z, never 04:34:17.1Z).
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// utcStamp is t in timeLayout.
func utcStamp(t time.Time) string { return t.UTC().Format(timeLayout) }
