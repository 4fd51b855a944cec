package main

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
)

// daemon is one running delaybridge process, launched as the tests launch
// theirs (internal/testing/e2etest).
type daemon struct {
	*e2etest.Daemon
	finished bool
}

// startTimeout bounds how long a started daemon may take to own every slot of
// its topic.
const startTimeout = 30 * time.Second

// stopTimeout is how long a daemon may drain after SIGTERM before it is
// killed.
const stopTimeout = 30 * time.Second

// startDaemon runs `delaybridge run` with vars on top of an environment
// stripped of every other DELAYBRIDGE_* variable, and waits until it serves
// HTTP and owns every slot of its topic.
func startDaemon(ctx context.Context, e *env, vars map[string]string, slots int) (*daemon, error) {
	return startDaemonTopics(ctx, e, vars, map[string]int{"bench": slots})
}

// startDaemonTopics is startDaemon for several topics: it waits until the
// daemon owns every slot of each topic of want (name → slots).
func startDaemonTopics(ctx context.Context, e *env, vars map[string]string, want map[string]int) (*daemon, error) {
	bin, err := filepath.Abs(e.o.bin)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("daemon binary: %w (run make build)", err)
	}
	all := map[string]string{
		"DELAYBRIDGE_REDIS_URL":  e.o.redisURL,
		"DELAYBRIDGE_AMQP_URL":   e.o.amqpURL,
		"DELAYBRIDGE_REPLICA_ID": "bench-" + e.o.scenarioID,
	}
	maps.Copy(all, vars)
	for _, kv := range e.o.daemonEnv {
		k, v, _ := strings.Cut(kv, "=")
		all[k] = v
	}
	ed, err := e2etest.Launch(bin, all)
	if err != nil {
		if ed != nil {
			return nil, fmt.Errorf("%w; log: %s", err, keepLog(ed))
		}
		return nil, err
	}
	d := &daemon{Daemon: ed}
	deadline := time.Now().Add(startTimeout)
	for {
		m, err := d.metrics()
		owned := err == nil
		for name, slots := range want {
			owned = owned && m[`delaybridge_owned_slots{topic="`+name+`"}`] == float64(slots)
		}
		if owned {
			return d, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			_ = d.Stop(stopTimeout)
			return nil, fmt.Errorf("daemon did not own the slots of its topics %v within %s (%v, %v); log: %s", want, startTimeout, err, ctx.Err(), keepLog(ed))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// finish stops the daemon and keeps its log in a file when asked to or when
// it did not stop cleanly.
func (d *daemon) finish(keep bool) {
	if d.finished {
		return
	}
	d.finished = true
	if err := d.Stop(stopTimeout); err != nil {
		fmt.Fprintln(os.Stderr, "   daemon:", err)
		keep = true
	}
	if keep {
		fmt.Fprintln(os.Stderr, "   daemon log:", keepLog(d.Daemon))
	}
}

// keepLog writes the daemon's log to a file and returns its path.
func keepLog(d *e2etest.Daemon) string {
	f, err := os.CreateTemp("", "delaybridge-bench-*.log")
	if err != nil {
		return "(not kept: " + err.Error() + ")"
	}
	defer f.Close()
	if _, err := f.WriteString(d.Log()); err != nil {
		return "(not kept: " + err.Error() + ")"
	}
	return f.Name()
}

// metrics scrapes /metrics into name{labels} → value.
func (d *daemon) metrics() (map[string]float64, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + d.Addr() + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		out[line[:i]] = v
	}
	return out, sc.Err()
}

// batches is how many batches of topic the daemon published (its
// publish_duration_seconds count); 0 when the metrics cannot be read.
func (d *daemon) batches(topic string) int64 {
	m, err := d.metrics()
	if err != nil {
		return 0
	}
	n := 0.0
	for k, v := range m {
		if rest, ok := strings.CutPrefix(k, "delaybridge_publish_duration_seconds_count{"); ok && strings.Contains(rest, `topic="`+topic+`"`) {
			n += v
		}
	}
	return int64(n)
}

// failures sums the daemon's failure counters, for the notes.
func (d *daemon) failures() []string {
	m, err := d.metrics()
	if err != nil {
		return []string{"metrics: " + err.Error()}
	}
	var notes []string
	for k, v := range m {
		if v == 0 {
			continue
		}
		for _, name := range []string{"delaybridge_publish_failures_total", "delaybridge_redis_errors_total", "delaybridge_dead_total", "delaybridge_reaped_total", "delaybridge_retried_total"} {
			if strings.HasPrefix(k, name) {
				notes = append(notes, fmt.Sprintf("daemon %s = %.0f", k, v))
			}
		}
	}
	return notes
}

// histograms summarises the daemon's own lateness (broker confirm − due)
// and publish duration histograms: the bucket bound under which 50% and 99%
// fall. Compared with the consumer's lateness it shows whether time is
// lost before the broker confirmed or between the broker and the consumer.
func (d *daemon) histograms() string { return d.histogramsOf("bench") }

// histogramsOf is histograms for one topic.
func (d *daemon) histogramsOf(topic string) string {
	m, err := d.metrics()
	if err != nil {
		return "metrics: " + err.Error()
	}
	quantile := func(name string, q float64) string {
		type bucket struct{ le, n float64 }
		var bs []bucket
		total := 0.0
		for k, v := range m {
			rest, ok := strings.CutPrefix(k, name+`_bucket{`)
			if !ok || !strings.Contains(rest, `topic="`+topic+`"`) {
				continue
			}
			i := strings.Index(rest, `le="`)
			if i < 0 {
				continue
			}
			leText := rest[i+4:]
			leText = leText[:strings.IndexByte(leText, '"')]
			le, err := strconv.ParseFloat(leText, 64)
			if err != nil {
				continue
			}
			bs = append(bs, bucket{le, v})
			total = max(total, v)
		}
		slices.SortFunc(bs, func(a, b bucket) int { return cmp.Compare(a.le, b.le) })
		for _, b := range bs {
			if total > 0 && b.n >= q*total {
				return fmt.Sprintf("<= %g ms", b.le*1000)
			}
		}
		return "?"
	}
	return fmt.Sprintf("daemon's own histograms of %s: lateness at confirm p50 %s, p99 %s; publish duration p50 %s, p99 %s",
		topic, quantile("delaybridge_lateness_seconds", .5), quantile("delaybridge_lateness_seconds", .99),
		quantile("delaybridge_publish_duration_seconds", .5), quantile("delaybridge_publish_duration_seconds", .99))
}

// cpu is the CPU time the process used so far: the sum of its threads'
// schedstat run times (ns precision), or utime+stime when unavailable.
func (d *daemon) cpu() time.Duration { return processCPU(d.PID()) }

func processCPU(pid int) time.Duration {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err == nil {
		var sum time.Duration
		ok := true
		for _, t := range tasks {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, t.Name()))
			if err != nil {
				continue // thread ended meanwhile
			}
			f := strings.Fields(string(b))
			if len(f) < 1 {
				ok = false
				break
			}
			ns, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				ok = false
				break
			}
			sum += time.Duration(ns)
		}
		if ok && sum > 0 {
			return sum
		}
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command name, which is in parentheses.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * (time.Second / 100) // USER_HZ is 100 on Linux
}

// peakRSS is the process's peak resident set (VmHWM) in bytes.
func (d *daemon) peakRSS() int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", d.PID()))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(rest)
			if len(f) >= 1 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}
