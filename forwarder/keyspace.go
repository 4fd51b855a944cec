package forwarder

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
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
// poll is the interval while polling, safety the safety poll.
func (k *keyspaceState) pollInterval(poll, safety time.Duration) time.Duration {
	if k.get() == modePoll {
		return poll
	}
	d := safety
	return d - time.Duration(rand.Int64N(int64(d/10)+1))
}

// keyspaceWatcher keeps the mode right: it reads the Redis setting at
// start, every recheck interval and whenever the subscription is made
// again, subscribes while the setting delivers sorted-set events, and acts
// on the notifications (keyEvent).
type keyspaceWatcher struct {
	q   *queue.Queue
	m   *Metrics
	log *slog.Logger
	cfg keyspaceConfig
	// locate finds the slot of a notified key.
	locate *queue.KeyLocator
	ks     *keyspaceState
	wakes  *wakeups
	reaps  *reapSchedule
	stats  *statsCache

	// run's own: the mode the setting allows and why, the subscription's
	// stop, and the subscription's request to read the setting again.
	want, reason string
	stop         context.CancelFunc
	recheck      chan struct{}
	passed       passes // tests: signalled after each reading of the setting
}

// keyspaceConfig configures a keyspaceWatcher.
type keyspaceConfig struct {
	Topics    []Topic
	KeyPrefix string
	// Events is "auto" (default) or "off" (Options.KeyspaceEvents).
	Events string
	// Recheck is how often the setting is read again (default
	// keyspaceRecheck).
	Recheck time.Duration
	// Lease is the claims' lease: a lease seen set is reaped after it.
	Lease time.Duration
	// PollInterval and SafetyPoll are the idle slots' polls without and
	// with notifications, for the logs.
	PollInterval, SafetyPoll time.Duration
	// PausedChanged is told of a topic (its index) whose pause key changed
	// (modeAll carries hash events): the paused gauge follows at once.
	PausedChanged func(topic int)
}

func newKeyspaceWatcher(cfg keyspaceConfig, q *queue.Queue, m *Metrics, log *slog.Logger, shared slotShared) (*keyspaceWatcher, error) {
	cfg.Events = cmp.Or(cfg.Events, "auto")
	cfg.Recheck = cmp.Or(cfg.Recheck, keyspaceRecheck)
	if cfg.Events != "auto" && cfg.Events != "off" {
		return nil, fmt.Errorf("keyspace watcher: events %q: want auto or off", cfg.Events)
	}
	if cfg.Recheck <= 0 || cfg.Lease <= 0 {
		return nil, fmt.Errorf("keyspace watcher: recheck %s, lease %s: want positive durations", cfg.Recheck, cfg.Lease)
	}
	return &keyspaceWatcher{q: q, m: m, log: log, cfg: cfg, locate: queue.NewKeyLocator(cfg.KeyPrefix, topicsOf(cfg.Topics)), ks: shared.ks, wakes: shared.wakes, reaps: shared.reaps,
		stats: shared.stats, stop: func() {}, recheck: make(chan struct{}, 1)}, nil
}

// run keeps the mode right until ctx ends.
func (w *keyspaceWatcher) run(ctx context.Context) {
	w.setMode(modePoll, "")
	if w.cfg.Events == "off" {
		w.log.Info("keyspace notifications not used: DELAYBRIDGE_KEYSPACE_EVENTS=off; idle slots are polled",
			"mode", modePoll, "poll_interval", w.cfg.PollInterval)
		return
	}
	defer func() { w.stop() }()
	for {
		w.runOnce(ctx)
		t := time.NewTimer(w.cfg.Recheck)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		case <-w.recheck:
			t.Stop()
		}
	}
}

// runOnce reads the setting and subscribes, unsubscribes or changes the
// mode to match.
func (w *keyspaceWatcher) runOnce(ctx context.Context) pass {
	defer w.passed.signal()
	m, why, failed := w.wanted(ctx)
	var p pass
	if failed {
		p.err = fmt.Errorf("reading notify-keyspace-events: %s", why)
	}
	if failed && w.want != "" {
		// Redis did not answer: the setting is as it was. Keep the
		// mode in force (dropping to polling would claim every slot
		// every poll interval) and read it again at the next recheck.
		w.log.Warn("reading notify-keyspace-events failed; keeping the mode in force", "mode", w.want, "err", why)
		m, why = w.want, w.reason
	}
	switch {
	case m == w.want:
	case m == modePoll:
		w.stop()
		w.setMode(modePoll, why)
		w.sweep() // scanners napping a long poll must poll again
	default:
		if w.want == modePoll || w.want == "" {
			w.stop()
			w.stop = w.subscribe(ctx, m)
		} else {
			w.setMode(m, why) // subscribed already: zset <-> all
		}
	}
	if m != w.want || why != w.reason {
		if m == modePoll {
			w.log.Info("keyspace notifications not used; idle slots are polled",
				"mode", m, "reason", why, "poll_interval", w.cfg.PollInterval)
		}
		w.want, w.reason = m, why
		p.done = 1 // the mode changed
	}
	return p
}

// wanted reads the Redis setting: the mode it allows, and why.
// failed is true when Redis did not answer (a timeout, a dropped
// connection): that says nothing about the setting.
func (w *keyspaceWatcher) wanted(ctx context.Context) (mode, why string, failed bool) {
	cctx, cancel := context.WithTimeout(ctx, redisTimeout)
	flags, err := w.q.KeyspaceFlags(cctx)
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

// setMode records the mode in force and shows it on the gauge (a pass, for
// a test waiting on the mode).
func (w *keyspaceWatcher) setMode(mode, why string) {
	defer w.passed.signal()
	old := w.ks.get()
	w.ks.mode.Store(mode)
	for _, m := range keyspaceModes {
		v := 0.0
		if m == mode {
			v = 1
		}
		w.m.KeyspaceEvents.WithLabelValues(m).Set(v)
	}
	if mode != modePoll && (old != mode || why != "") {
		w.log.Info("keyspace notifications in use; idle slots sleep until an event",
			"mode", mode, "reason", why, "safety_poll", w.cfg.SafetyPoll)
	}
}

// subscribe runs listen until the returned function is called (or ctx
// ends); the function waits for it to end.
func (w *keyspaceWatcher) subscribe(ctx context.Context, mode string) context.CancelFunc {
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.listen(sctx, mode)
	}()
	return func() { cancel(); <-done }
}

// listen subscribes and relays notifications until ctx ends. The mode
// takes effect once the subscription is confirmed; every confirmation after
// the first (a reconnect) asks run to read the setting again.
func (w *keyspaceWatcher) listen(ctx context.Context, mode string) {
	first := true
	for ev := range w.q.KeyEvents(ctx, w.q.KeyspacePatterns(topicsOf(w.cfg.Topics))) {
		if !ev.Subscribed {
			w.keyEvent(ev)
			continue
		}
		if first {
			w.setMode(mode, "subscribed")
			first = false
		} else {
			select {
			case w.recheck <- struct{}{}:
			default:
			}
		}
		w.sweep() // notifications before the subscription are lost
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
func (w *keyspaceWatcher) sweep() {
	w.wakes.all(math.Inf(-1))
	w.reaps.all()
	w.stats.all()
}

// keyEvent acts on one notification about a key of an owned slot: a
// scheduled set that gained members rings the slot's alarm (the event
// carries no score: the scanner claims and learns the next one), an in-flight
// set that gained a lease makes the reaper look when that lease could
// expire, and any change marks the slot's gauges stale.
func (w *keyspaceWatcher) keyEvent(ev queue.KeyEvent) {
	k, suffix, ok := w.slotOfKey(ev.Key)
	if !ok {
		return
	}
	w.stats.mark(k)
	grew := queue.EventAdds(ev.Event)
	if suffix == ":paused" && w.cfg.PausedChanged != nil {
		w.cfg.PausedChanged(k.topic)
	}
	switch {
	case !grew:
	case suffix == "":
		w.wakes.wake(k, math.Inf(-1))
	case suffix == ":inflight":
		w.reaps.note(k, time.Now().Add(w.cfg.Lease+reapGrace(w.cfg.Lease)))
	}
}

// slotOfKey finds the topic×slot a key belongs to and which of its keys it
// is (queue.KeyLocator).
func (w *keyspaceWatcher) slotOfKey(key string) (slotKey, string, bool) {
	p, ok := w.locate.Locate(key)
	return slotKey{p.Topic, p.Slot}, p.Suffix, ok
}
