package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// A message body is "b<seq, 10 digits> <due ms, 13 digits> " padded with 'x'
// to the body size: unique per scenario, and it tells the consumer which
// message arrived and when it was due without any lookup.
const (
	seqDigits = 10
	dueDigits = 13
	minBody   = 1 + seqDigits + 1 + dueDigits + 1
)

// body writes message seq, due at dueMs, into a new slice of size bytes.
func body(seq int, dueMs int64, size int) []byte {
	b := make([]byte, size)
	b[0] = 'b'
	putDigits(b[1:1+seqDigits], int64(seq))
	b[1+seqDigits] = ' '
	putDigits(b[2+seqDigits:2+seqDigits+dueDigits], dueMs)
	for i := minBody - 1; i < size; i++ {
		b[i] = 'x'
	}
	b[minBody-1] = ' '
	return b
}

func putDigits(b []byte, v int64) {
	for i := len(b) - 1; i >= 0; i-- {
		b[i] = byte('0' + v%10)
		v /= 10
	}
}

// parseBody reads the sequence number and due time of a body.
func parseBody(b []byte) (seq int, dueMs int64, ok bool) {
	if len(b) < minBody || b[0] != 'b' {
		return 0, 0, false
	}
	s, err := strconv.ParseInt(string(b[1:1+seqDigits]), 10, 64)
	if err != nil {
		return 0, 0, false
	}
	d, err := strconv.ParseInt(string(b[2+seqDigits:2+seqDigits+dueDigits]), 10, 64)
	if err != nil {
		return 0, 0, false
	}
	return int(s), d, true
}

// tracker records when each of n numbered messages first arrived. got is
// called by one consumer goroutine; the counters may be read at any time,
// the slices once that goroutine has ended.
type tracker struct {
	n      int
	recv   []int64 // Unix ns of the first receipt, 0: not received
	due    []int64 // Unix ms the message said it was due
	unique atomic.Int64
	dups   atomic.Int64
	bad    atomic.Int64
	last   atomic.Int64 // Unix ns of the latest first receipt
}

func newTracker(n int) *tracker {
	return &tracker{n: n, recv: make([]int64, n), due: make([]int64, n)}
}

// got records one delivery of body b at time at (Unix ns).
func (t *tracker) got(b []byte, at int64) {
	seq, due, ok := parseBody(b)
	if !ok {
		t.bad.Add(1)
		return
	}
	t.record(seq, due, at)
}

// record is got for message seq, due at due (Unix ms), read by the caller.
func (t *tracker) record(seq int, due, at int64) {
	if seq < 0 || seq >= t.n {
		t.bad.Add(1)
		return
	}
	if t.recv[seq] != 0 {
		t.dups.Add(1)
		return
	}
	t.recv[seq], t.due[seq] = at, due
	t.last.Store(at)
	t.unique.Add(1)
}

// wait polls until every message arrived, ctx-free deadline passes, or no
// message arrived for idle; it reports whether all arrived.
func (t *tracker) wait(deadline time.Time, idle time.Duration) bool {
	return t.waitFor(t.n, deadline, idle)
}

// waitFor is wait for the first k messages (of a tracker sized for more than
// were sent): true once k arrived.
func (t *tracker) waitFor(k int, deadline time.Time, idle time.Duration) bool {
	lastCount, lastChange := int64(-1), time.Now()
	for {
		c := t.unique.Load()
		if c >= int64(k) {
			return true
		}
		now := time.Now()
		if c != lastCount {
			lastCount, lastChange = c, now
		}
		if now.After(deadline) || now.Sub(lastChange) > idle {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// outcome is what the tracker saw, once its consumer has ended.
type outcome struct {
	received       int
	lost, early    int
	dups, bad      int
	lateMs         []float64
	firstRecv      time.Time
	lastRecv       time.Time
	minDue, maxDue time.Time
}

func (t *tracker) outcome() outcome {
	o := outcome{dups: int(t.dups.Load()), bad: int(t.bad.Load()), lateMs: make([]float64, 0, t.n)}
	var first, last, minDue, maxDue int64
	for i, at := range t.recv {
		if at == 0 {
			o.lost++
			continue
		}
		o.received++
		dueNs := t.due[i] * int64(time.Millisecond)
		late := at - dueNs
		if late < 0 {
			o.early++
		}
		o.lateMs = append(o.lateMs, float64(late)/1e6)
		if first == 0 || at < first {
			first = at
		}
		last = max(last, at)
		if minDue == 0 || dueNs < minDue {
			minDue = dueNs
		}
		maxDue = max(maxDue, dueNs)
	}
	if o.received > 0 {
		o.firstRecv, o.lastRecv = time.Unix(0, first), time.Unix(0, last)
		o.minDue, o.maxDue = time.Unix(0, minDue), time.Unix(0, maxDue)
	}
	return o
}

// fill copies what the tracker saw into r.
func (o outcome) fill(r *Scenario) {
	r.Lateness = latenessOf(o.lateMs)
	r.Early, r.Lost, r.Duplicates = o.early, o.lost, o.dups
	if o.bad > 0 {
		r.Notes = append(r.Notes, strconv.Itoa(o.bad)+" deliveries were not benchmark messages")
	}
}

func randomID() string {
	b := make([]byte, 4)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// dump writes seq, due (Unix ms) and lateness (ms) of every received message
// of a scenario to <-dump>/<name>.csv, for a closer look.
func (e *env) dump(name string, t *tracker) {
	if e.o.dumpDir == "" {
		return
	}
	var b strings.Builder
	b.WriteString("seq,due_ms,lateness_ms\n")
	for i, at := range t.recv {
		if at != 0 {
			fmt.Fprintf(&b, "%d,%d,%.3f\n", i, t.due[i], float64(at-t.due[i]*int64(time.Millisecond))/1e6)
		}
	}
	path := filepath.Join(e.o.dumpDir, name+".csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "   dump:", err)
	}
}
