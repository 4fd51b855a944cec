package forwarder

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"
)

// wakeups maps owned slots to their scanners' wake channels.
type wakeups struct {
	mu sync.Mutex
	ch map[slotKey]chan<- struct{}
}

func newWakeups() *wakeups { return &wakeups{ch: map[slotKey]chan<- struct{}{}} }

func (w *wakeups) add(k slotKey, c chan<- struct{}) {
	w.mu.Lock()
	w.ch[k] = c
	w.mu.Unlock()
}

func (w *wakeups) remove(k slotKey) {
	w.mu.Lock()
	delete(w.ch, k)
	w.mu.Unlock()
}

// wake nudges the scanner of k, if this replica runs one; never blocks.
func (w *wakeups) wake(k slotKey) {
	w.mu.Lock()
	c := w.ch[k]
	w.mu.Unlock()
	if c == nil {
		return
	}
	select {
	case c <- struct{}{}:
	default:
	}
}

// WakeChannel is the Redis Pub/Sub channel producers publish to after
// scheduling, with payload "<topic>\n<slot>\n<score>", so a sleeping scanner
// wakes for a message due before the one it sleeps for.
func WakeChannel(prefix string) string { return prefix + ":wake" }

// listenWake subscribes to the wake channel and nudges the scanners, until
// ctx ends. A lost subscription only costs precision: scanners still wake at
// their next due score or poll interval.
func (f *Forwarder) listenWake(ctx context.Context) {
	index := map[string]int{}
	for i, t := range f.opt.Topics {
		index[t.Name] = i
	}
	for ctx.Err() == nil {
		ps := f.q.Client().Subscribe(ctx, WakeChannel(f.opt.KeyPrefix))
		ch := ps.Channel()
	recv:
		for {
			select {
			case <-ctx.Done():
				break recv
			case msg, ok := <-ch:
				if !ok {
					break recv
				}
				topic, rest, _ := strings.Cut(msg.Payload, "\n")
				slotText, _, _ := strings.Cut(rest, "\n")
				ti, known := index[topic]
				slot, err := strconv.Atoi(slotText)
				if known && err == nil {
					f.wakes.wake(slotKey{ti, slot})
				}
			}
		}
		ps.Close()
		sleep(ctx, time.Second, nil)
	}
}
