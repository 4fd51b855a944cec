package forwarder

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"

	"github.com/delaybridge/delaybridge/queue"
)

// alarm wakes one scanner for a message due before the time it planned to
// look again. Announcements carry the message's due score (Redis ms), so a
// scanner is not woken for a message that falls due after the one it
// already sleeps for.
//
// The scanner resets the alarm before each claim (the claim sees every
// message scheduled before it) and plans after: plan returns the earliest
// score announced meanwhile. ring stores the score before it reads the plan
// and plan stores the plan before it reads the scores, so an announcement
// racing with a claim is seen by one of the two.
type alarm struct {
	C        chan struct{} // signalled when an announced score is before the plan
	planned  atomic.Uint64 // float64 bits: Redis ms the scanner will look by; 0 while it is busy
	earliest atomic.Uint64 // float64 bits: earliest score announced since reset
}

func newAlarm() *alarm {
	a := &alarm{C: make(chan struct{}, 1)}
	a.earliest.Store(math.Float64bits(math.Inf(1)))
	return a
}

// ring announces a message due at score (Redis ms; -Inf for "due now").
func (a *alarm) ring(score float64) {
	for {
		old := a.earliest.Load()
		if math.Float64frombits(old) <= score || a.earliest.CompareAndSwap(old, math.Float64bits(score)) {
			break
		}
	}
	if score < math.Float64frombits(a.planned.Load()) {
		select {
		case a.C <- struct{}{}:
		default:
		}
	}
}

// reset forgets earlier announcements before a claim.
func (a *alarm) reset() {
	a.planned.Store(0)
	a.earliest.Store(math.Float64bits(math.Inf(1)))
	select {
	case <-a.C:
	default:
	}
}

// plan records that the scanner looks again at target (Redis ms) and
// returns the time it must look instead: target, or an earlier announced
// score.
func (a *alarm) plan(target float64) float64 {
	a.planned.Store(math.Float64bits(target))
	return min(target, math.Float64frombits(a.earliest.Load()))
}

// wakeups maps owned slots to their scanners' alarms.
type wakeups struct {
	mu sync.Mutex
	a  map[slotKey]*alarm
}

func newWakeups() *wakeups { return &wakeups{a: map[slotKey]*alarm{}} }

func (w *wakeups) add(k slotKey, a *alarm) {
	w.mu.Lock()
	w.a[k] = a
	w.mu.Unlock()
}

func (w *wakeups) remove(k slotKey) {
	w.mu.Lock()
	delete(w.a, k)
	w.mu.Unlock()
}

// wake tells the scanner of k, if this replica runs one, that a message is
// due at score; never blocks.
func (w *wakeups) wake(k slotKey, score float64) {
	w.mu.Lock()
	a := w.a[k]
	w.mu.Unlock()
	if a != nil {
		a.ring(score)
	}
}

// all tells every scanner of this replica that a message is due at score.
func (w *wakeups) all(score float64) {
	w.mu.Lock()
	as := make([]*alarm, 0, len(w.a))
	for _, a := range w.a {
		as = append(as, a)
	}
	w.mu.Unlock()
	for _, a := range as {
		a.ring(score)
	}
}

// wakeListener nudges the scanners with the queue's wake-ups. A lost
// wake-up only costs precision: scanners still wake at their next due score
// or poll interval. A wake-up also marks the slot's gauges stale (schedule,
// requeue and resume publish one).
type wakeListener struct {
	q          *queue.Queue
	prefix     string         // the wake channel's key prefix
	topicIndex map[string]int // topic name to index
	wakes      *wakeups
	stats      *statsCache
}

func newWakeListener(q *queue.Queue, prefix string, topicIndex map[string]int, shared slotShared) (*wakeListener, error) {
	if prefix == "" {
		return nil, errors.New("wake listener: no key prefix")
	}
	return &wakeListener{q: q, prefix: prefix, topicIndex: topicIndex, wakes: shared.wakes, stats: shared.stats}, nil
}

// run relays the wake-ups until ctx ends.
func (l *wakeListener) run(ctx context.Context) {
	for w := range l.q.Wakes(ctx, l.prefix) {
		l.relay(w)
	}
}

// relay rings the alarm of the scanner of w's slot, if this replica runs
// one, and marks the slot's gauges stale. When the subscription was made
// (again), wake-ups published before it were missed: every scanner looks
// at once, and every gauge is stale.
func (l *wakeListener) relay(w queue.Wake) {
	if w.Subscribed {
		l.stats.all()
		l.wakes.all(math.Inf(-1))
		return
	}
	if ti, known := l.topicIndex[w.Topic]; known {
		k := slotKey{ti, w.Slot}
		l.stats.mark(k)
		l.wakes.wake(k, w.Score)
	}
}
