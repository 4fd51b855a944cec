package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/queue"
)

// idleTopics is how many topics idle's slots are spread over.
const idleTopics = 4

// keyspaceVar selects whether the daemon follows Redis keyspace
// notifications (auto) or only polls (off).
const keyspaceVar = "DELAYBRIDGE_KEYSPACE_EVENTS"

// runIdle: idle with Redis's keyspace notifications on as the README
// recommends (Kghz: sorted-set, hash and generic events; with Kz alone the
// backlog gauges still re-read every slot every 10 s) and the daemon left to
// use them (auto).
func runIdle(ctx context.Context, e *env) (Scenario, error) {
	return e.idle(ctx, "idle", true)
}

// runIdlePoll: idle with notifications off on Redis and in the daemon: it
// only polls.
func runIdlePoll(ctx context.Context, e *env) (Scenario, error) {
	return e.idle(ctx, "idle-poll", false)
}

// idleTopicsOf are idle's topics under prefix: idleSlots slots in all.
func idleTopicsOf(prefix string, slots int) []queue.Topic {
	ts := make([]queue.Topic, idleTopics)
	for i := range ts {
		ts[i] = queue.Topic{Name: "bench" + strconv.Itoa(i), Prefix: prefix, Slots: slots / idleTopics}
	}
	return ts
}

// idle: idleSlots slots over idleTopics topics, half of them holding a
// message due in an hour, nothing due. First idleFor with nothing else
// going on: the daemon's Redis commands (MONITOR, scripts' included) and
// CPU. Then probes: raw members written with a plain ZADD (no wake-up
// publish) into random topics, each due 200–800 ms after it is written,
// and their lateness at the consumer.
func (e *env) idle(ctx context.Context, name string, keyspace bool) (Scenario, error) {
	s := e.o.sizes
	r := Scenario{}
	prefix, target, drop, err := e.space(name)
	if err != nil {
		return r, err
	}
	defer drop()
	topics := idleTopicsOf(prefix, s.idleSlots)
	held, err := e.holdLater(ctx, topics)
	if err != nil {
		return r, err
	}
	events, mode := "", "off"
	if keyspace {
		events, mode = "Kghz", "auto"
	}
	restore, err := e.keyspaceEvents(ctx, events, &r)
	if err != nil {
		return r, err
	}
	defer restore()

	vars := map[string]string{"DELAYBRIDGE_KEY_PREFIX": prefix, keyspaceVar: mode}
	want := map[string]int{}
	var names []string
	for _, t := range topics {
		v := "DELAYBRIDGE_TOPIC_" + strings.ToUpper(t.Name) + "_"
		vars[v+"SINK"], vars[v+"SLOTS"] = "amqp", strconv.Itoa(t.Slots)
		vars[v+"EXCHANGE"], vars[v+"ROUTING_KEY"] = target.name, routingKey
		want[t.Name] = t.Slots
		names = append(names, t.Name)
	}
	vars["DELAYBRIDGE_TOPICS"] = strings.Join(names, ",")
	d, err := startDaemonTopics(ctx, e, vars, want)
	if err != nil {
		return r, err
	}
	defer d.finish(e.o.keepLogs)
	for _, kv := range e.o.daemonEnv {
		if v, ok := strings.CutPrefix(kv, keyspaceVar+"="); ok {
			mode = v // -daemon-env wins, as startDaemon applies it last
		}
	}
	time.Sleep(2 * time.Second) // past start-up: first claims, reaps and stats
	// After start-up: the daemon starts polling and takes the mode Redis
	// allows once it has read the setting.
	r.Notes = append(r.Notes, d.keyspaceMode(mode))
	if err := e.measureIdle(ctx, d, &r); err != nil {
		return r, err
	}
	r.Notes = append(r.Notes, fmt.Sprintf("%d slots over %d topics, %d of them holding a message due in an hour", s.idleSlots, len(topics), held))

	if err := e.idleProbes(ctx, d, target, topics, &r); err != nil {
		return r, err
	}
	r.Notes = append(r.Notes, d.failures()...)
	r.target("Redis commands/s of the daemon (scripts' included)", r.RedisCmds, "<", 100, "/s")
	r.target("daemon CPU", 100*r.DaemonCPU/r.WindowS, "<", 1, "% of a core")
	if keyspace {
		r.target("lateness p99 of raw ZADDs (keyspace notifications)", r.Lateness.P99, "<=", 5, "ms")
	} else {
		poll := e.pollInterval()
		r.target("lateness max of raw ZADDs (polling only)", r.Lateness.Max, "<=", float64(poll.Milliseconds()), "ms", "the poll interval")
	}
	r.checkAlways()
	return r, nil
}

// holdLater puts a message due in an hour in every other slot of topics.
func (e *env) holdLater(ctx context.Context, topics []queue.Topic) (int, error) {
	later := time.Now().Add(time.Hour).UnixMilli()
	held := 0
	for _, t := range topics {
		var msgs []scheduled
		filled := map[int]bool{}
		for i := 0; len(filled) < t.Slots/2 && i < 100_000; i++ {
			b := body(i, later, e.o.size)
			if slot := queue.Slot(b, t.Slots); slot%2 == 0 && !filled[slot] {
				filled[slot] = true
				msgs = append(msgs, scheduled{member: b, score: float64(later)})
			}
		}
		if err := e.schedule(ctx, t, msgs); err != nil {
			return 0, err
		}
		held += len(msgs)
	}
	return held, nil
}

// measureIdle counts the daemon's Redis commands (MONITOR) and CPU over
// idleFor with nothing due.
func (e *env) measureIdle(ctx context.Context, d *daemon, r *Scenario) error {
	mon, err := startMonitor(ctx, e.o.redisURL, d.PID())
	if err != nil {
		return err
	}
	w := e.startWindow(ctx, d)
	select {
	case <-time.After(e.o.sizes.idleFor):
	case <-ctx.Done():
		mon.stop()
		return ctx.Err()
	}
	w.end(ctx, r)
	calls, cmds, err := mon.stop()
	if err != nil {
		return err
	}
	span := time.Duration(r.WindowS * float64(time.Second))
	r.RedisCalls = perSecond(float64(calls), span)
	r.RedisCmds = perSecond(float64(cmds), span)
	r.RedisWork = 0 // Redis-wide here: the monitor's counts are the daemon's
	r.Notes = append(r.Notes, fmt.Sprintf("daemon CPU %.2f%% of one core over %.1f s with nothing due", 100*r.DaemonCPU/r.WindowS, r.WindowS))
	fmt.Fprintf(os.Stderr, "   delaybridge idle: %.2f%% CPU, %.0f redis calls/s, %.0f redis commands/s\n", 100*r.DaemonCPU/r.WindowS, r.RedisCalls, r.RedisCmds)
	return nil
}

// idleProbes writes idleProbeCount raw members with plain ZADDs over
// idleProbeFor, each into a random topic and due 200–800 ms after it is
// written, and fills r with their lateness at the consumer.
func (e *env) idleProbes(ctx context.Context, d *daemon, target rabbitTarget, topics []queue.Topic, r *Scenario) error {
	n, span := e.o.sizes.idleProbes, e.o.sizes.idleProbeFor
	r.Messages = n
	tr := newTracker(n)
	stop, err := e.consume(target, tr)
	if err != nil {
		return err
	}
	defer stop()
	mon, err := startMonitor(ctx, e.o.redisURL, d.PID())
	if err != nil {
		return err
	}
	start := time.Now()
	var lastDue time.Time
	for i := range n {
		time.Sleep(time.Until(start.Add(span * time.Duration(i) / time.Duration(n))))
		due := time.Now().Add(200*time.Millisecond + rand.N(600*time.Millisecond)).Truncate(time.Millisecond)
		b := body(i, due.UnixMilli(), e.o.size)
		t := topics[rand.N(len(topics))]
		if err := e.rdb.ZAdd(ctx, t.Keys(queue.Slot(b, t.Slots)).Scheduled, redis.Z{Score: float64(due.UnixMilli()), Member: b}).Err(); err != nil {
			mon.stop()
			return fmt.Errorf("probe zadd: %w", err)
		}
		if due.After(lastDue) {
			lastDue = due
		}
	}
	tr.wait(lastDue.Add(30*time.Second), 10*time.Second)
	calls, cmds, err := mon.stop()
	stop()
	if err != nil {
		return err
	}
	out := tr.outcome()
	out.fill(r)
	e.dump(r.Name+"-probes", tr)
	took := time.Since(start)
	r.Notes = append(r.Notes, fmt.Sprintf("%d raw ZADDs without a wake-up publish over %s, due 200–800 ms after written: lateness p50 %.1f / p99 %.1f / max %.1f ms; the daemon meanwhile sent %.0f Redis calls/s, %.0f commands/s with its scripts'",
		n, span, r.Lateness.P50, r.Lateness.P99, r.Lateness.Max, perSecond(float64(calls), took), perSecond(float64(cmds), took)))
	fmt.Fprintf(os.Stderr, "   raw zadd probes: p50 %.1f ms, p99 %.1f ms, max %.1f ms, %d early, %d lost\n", r.Lateness.P50, r.Lateness.P99, r.Lateness.Max, r.Early, r.Lost)
	return nil
}

// keyspaceEvents sets Redis's notify-keyspace-events for the scenario and
// returns what puts the previous value back.
func (e *env) keyspaceEvents(ctx context.Context, events string, r *Scenario) (func(), error) {
	prev, err := e.rdb.ConfigGet(ctx, "notify-keyspace-events").Result()
	if err != nil {
		return nil, fmt.Errorf("config get notify-keyspace-events: %w", err)
	}
	if err := e.rdb.ConfigSet(ctx, "notify-keyspace-events", events).Err(); err != nil {
		return nil, fmt.Errorf("config set notify-keyspace-events %q: %w", events, err)
	}
	note := fmt.Sprintf("Redis notify-keyspace-events set to %q for the scenario", events)
	if e.o.redisBin == "" {
		note += " on the external Redis of -redis (shared with its other clients; restored afterwards)"
	}
	r.Notes = append(r.Notes, note)
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		e.rdb.ConfigSet(ctx, "notify-keyspace-events", prev["notify-keyspace-events"])
	}, nil
}

// keyspaceMode says how the daemon said it watches for new messages: its
// delaybridge_keyspace_events gauge.
func (d *daemon) keyspaceMode(asked string) string {
	note := fmt.Sprintf("daemon given %s=%s", keyspaceVar, asked)
	m, err := d.metrics()
	if err != nil {
		return note + "; metrics: " + err.Error()
	}
	found := false
	for k, v := range m {
		if strings.HasPrefix(k, "delaybridge_keyspace_events") {
			note += fmt.Sprintf("; /metrics %s = %g", k, v)
			found = true
		}
	}
	if !found {
		note += "; /metrics has no delaybridge_keyspace_events gauge"
	}
	return note
}

// pollInterval is the daemon's poll interval: its default, or what
// -daemon-env set.
func (e *env) pollInterval() time.Duration {
	poll := time.Second
	for _, kv := range e.o.daemonEnv {
		if v, ok := strings.CutPrefix(kv, "DELAYBRIDGE_POLL_INTERVAL="); ok {
			if p, err := time.ParseDuration(v); err == nil {
				poll = p
			}
		}
	}
	return poll
}
