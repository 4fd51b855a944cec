package forwarder

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/delaybridge/delaybridge/queue"
)

// Keyspace notifications (see queue/keyspace.go) replace polling when Redis
// sends them: a scanner then sleeps until its next due score, a notification
// or a wake-up, at the latest KeyspacePollInterval; the reaper and the backlog
// gauges learn from them which slots changed. Notifications sent while the
// subscription is down are lost, so every (re)subscription sweeps: every
// owned slot is claimed, reaped and read again.

// Keyspace modes, the label of delaybridge_keyspace_events.
const (
	// modePoll: no notifications; idle slots are claimed every PollInterval.
	modePoll = "poll"
	// modeZset: sorted-set notifications; idle slots are claimed on events,
	// backlog gauges are re-read every BacklogInterval.
	modeZset = "zset"
	// modeAll: sorted-set, hash and generic notifications; backlog gauges
	// are re-read only for slots that changed.
	modeAll = "all"
)

// keyspaceModes are every mode, for the gauge.
var keyspaceModes = []string{modePoll, modeZset, modeAll}

// keyspaceRecheck is how often the daemon reads notify-keyspace-events again.
const keyspaceRecheck = time.Minute

// keyspaceState is the mode in force; scanners, the reaper and the gauges
// read it.
type keyspaceState struct {
	mode atomic.Value // string
}

func (k *keyspaceState) get() string {
	if m, ok := k.mode.Load().(string); ok {
		return m
	}
	return modePoll
}

// pollInterval is the longest an idle slot sleeps in the mode in force.
// The safety poll of the notification modes is shortened by up to a tenth
// at random: every slot starts (and sweeps) at the same moment, and its
// claims would otherwise arrive as one burst per interval forever.
func (f *Forwarder) pollInterval() time.Duration {
	if f.ks.get() == modePoll {
		return f.opt.PollInterval
	}
	d := f.opt.KeyspacePollInterval
	return d - time.Duration(rand.Int64N(int64(d/10)+1))
}

// keyspaceLoop keeps the mode right until ctx ends: it reads the Redis
// setting at start, every Options.keyspaceRecheck and whenever the
// subscription is made again, and subscribes while the setting delivers
// sorted-set events.
func (f *Forwarder) keyspaceLoop(ctx context.Context) {
	f.setMode(modePoll, "")
	if f.opt.KeyspaceEvents == "off" {
		f.log.Info("keyspace notifications not used: DELAYBRIDGE_KEYSPACE_EVENTS=off; idle slots are polled",
			"mode", modePoll, "poll_interval", f.opt.PollInterval)
		return
	}
	recheck := make(chan struct{}, 1)
	var stop context.CancelFunc = func() {}
	defer func() { stop() }()
	want, reason := "", ""
	for {
		w, why, failed := f.keyspaceWanted(ctx)
		if failed && want != "" {
			// Redis did not answer: the setting is as it was. Keep the
			// mode in force (dropping to polling would claim every slot
			// every poll interval) and read it again at the next recheck.
			f.log.Warn("reading notify-keyspace-events failed; keeping the mode in force", "mode", want, "err", why)
			w, why = want, reason
		}
		switch {
		case w == want:
		case w == modePoll:
			stop()
			f.setMode(modePoll, why)
			f.sweep() // scanners napping a long poll must poll again
		default:
			if want == modePoll || want == "" {
				stop()
				stop = f.startKeyspace(ctx, w, recheck)
			} else {
				f.setMode(w, why) // subscribed already: zset <-> all
			}
		}
		if w != want || why != reason {
			if w == modePoll {
				f.log.Info("keyspace notifications not used; idle slots are polled",
					"mode", w, "reason", why, "poll_interval", f.opt.PollInterval)
			}
			want, reason = w, why
		}
		t := time.NewTimer(f.opt.keyspaceRecheck)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		case <-recheck:
			t.Stop()
		}
	}
}

// keyspaceWanted reads the Redis setting: the mode it allows, and why.
// failed is true when Redis did not answer (a timeout, a dropped
// connection): that says nothing about the setting.
func (f *Forwarder) keyspaceWanted(ctx context.Context) (mode, why string, failed bool) {
	cctx, cancel := context.WithTimeout(ctx, redisTimeout)
	flags, err := f.q.KeyspaceFlags(cctx)
	cancel()
	switch {
	case errors.Is(err, queue.ErrKeyspaceCluster):
		return modePoll, "Redis Cluster: notifications are per node", false
	case err != nil && refused(err):
		// Not the error's text: it names the refusal the ACL tests look for.
		return modePoll, "setting unknown: CONFIG GET refused (an ACL without +config|get, or a managed Redis)", false
	case err != nil:
		return modePoll, "setting unknown: " + err.Error(), true
	}
	s := queue.ParseKeyspaceFlags(flags)
	switch {
	case s.All:
		return modeAll, "notify-keyspace-events=" + strconv.Quote(flags), false
	case s.Zset:
		return modeZset, "notify-keyspace-events=" + strconv.Quote(flags) + " (no h or g: backlog gauges re-read every slot)", false
	default:
		return modePoll, "notify-keyspace-events=" + strconv.Quote(flags) + " lacks K and z (or K and A)", false
	}
}

// refused reports whether Redis refused a command (ACL, or a managed
// Redis that renamed or disabled it), rather than failed to answer.
func refused(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "NOPERM") || strings.Contains(msg, "unknown command") ||
		strings.Contains(msg, "no permissions")
}

// setMode records the mode in force and shows it on the gauge.
func (f *Forwarder) setMode(mode, why string) {
	old := f.ks.get()
	f.ks.mode.Store(mode)
	for _, m := range keyspaceModes {
		v := 0.0
		if m == mode {
			v = 1
		}
		f.m.KeyspaceEvents.WithLabelValues(m).Set(v)
	}
	if mode != modePoll && (old != mode || why != "") {
		f.log.Info("keyspace notifications in use; idle slots sleep until an event",
			"mode", mode, "reason", why, "safety_poll", f.opt.KeyspacePollInterval)
	}
}

// startKeyspace runs listenKeyspace until the returned function is called
// (or ctx ends); the function waits for it to end.
func (f *Forwarder) startKeyspace(ctx context.Context, mode string, recheck chan<- struct{}) context.CancelFunc {
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.listenKeyspace(sctx, mode, recheck)
	}()
	return func() { cancel(); <-done }
}

// listenKeyspace subscribes and relays notifications until ctx ends. The
// mode takes effect once the subscription is confirmed; every confirmation
// after the first (a reconnect) asks keyspaceLoop to read the setting again.
func (f *Forwarder) listenKeyspace(ctx context.Context, mode string, recheck chan<- struct{}) {
	first := true
	for ev := range f.q.KeyEvents(ctx, f.q.KeyspacePatterns(topicsOf(f.opt.Topics))) {
		if !ev.Subscribed {
			f.keyEvent(ev)
			continue
		}
		if first {
			f.setMode(mode, "subscribed")
			first = false
		} else {
			select {
			case recheck <- struct{}{}:
			default:
			}
		}
		f.sweep() // notifications before the subscription are lost
	}
}

func topicsOf(ts []Topic) []queue.Topic {
	out := make([]queue.Topic, len(ts))
	for i, t := range ts {
		out[i] = t.Topic
	}
	return out
}

// sweep makes every owned slot be claimed, reaped and read again at once.
func (f *Forwarder) sweep() {
	f.wakes.all(math.Inf(-1))
	f.reaps.all()
	f.stats.all()
}

// keyEvent acts on one notification about a key of an owned slot: a
// scheduled set that gained members rings the slot's alarm (the event
// carries no score: the scanner claims and learns the next one), an in-flight
// set that gained a lease makes the reaper look when that lease could
// expire, and any change marks the slot's gauges stale.
func (f *Forwarder) keyEvent(ev queue.KeyEvent) {
	k, suffix, ok := f.slotOfKey(ev.Key)
	if !ok {
		return
	}
	f.stats.mark(k)
	grew := false
	switch ev.Event {
	case "zadd", "zincr", "zunionstore", "zinterstore", "zdiffstore", "zrangestore",
		"rename_to", "restore", "copy_to", "move_to":
		grew = true
	}
	switch {
	case !grew:
	case suffix == "":
		f.wakes.wake(k, math.Inf(-1))
	case suffix == ":inflight":
		f.reaps.note(k, time.Now().Add(f.opt.Lease+f.reapGrace()))
	}
}

// slotOfKey finds the topic×slot a key belongs to and which of its keys it
// is (the part after the slot's base: "" for the scheduled set, ":inflight",
// …).
func (f *Forwarder) slotOfKey(key string) (slotKey, string, bool) {
	for ti, t := range f.opt.Topics {
		if t.Key == "" {
			continue
		}
		k := t.Keys(0)
		if key == k.Scheduled {
			return slotKey{ti, 0}, "", true
		}
		if rest, ok := strings.CutPrefix(key, strings.TrimSuffix(k.Inflight, ":inflight")); ok && strings.HasPrefix(rest, ":") {
			return slotKey{ti, 0}, rest, true
		}
	}
	rest, ok := strings.CutPrefix(key, f.opt.KeyPrefix+":{")
	if !ok {
		return slotKey{}, "", false
	}
	tag, suffix, ok := strings.Cut(rest, "}")
	if !ok {
		return slotKey{}, "", false
	}
	i := strings.LastIndexByte(tag, ':')
	if i < 0 {
		return slotKey{}, "", false
	}
	slot, err := strconv.Atoi(tag[i+1:])
	ti, known := f.topicIndex[tag[:i]]
	if err != nil || !known || f.opt.Topics[ti].Key != "" {
		return slotKey{}, "", false
	}
	return slotKey{ti, slot}, suffix, true
}
