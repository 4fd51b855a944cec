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

	"github.com/redis/go-redis/v9"

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
func (d *daemon) histograms() string {
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
			if !ok || !strings.Contains(rest, `topic="bench"`) {
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
	return fmt.Sprintf("daemon's own histograms: lateness at confirm p50 %s, p99 %s; publish duration p50 %s, p99 %s",
		quantile("delaybridge_lateness_seconds", .5), quantile("delaybridge_lateness_seconds", .99),
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

// window measures the daemon's CPU and Redis's commands over a span, and
// the CPU of every process involved, to show where the time goes.
type window struct {
	d     *daemon
	e     *env
	start time.Time
	cpu0  time.Duration
	redis redisCounters
	procs map[string]int
	cpus0 map[string]time.Duration
	noise *noiseProbe
}

func (e *env) startWindow(ctx context.Context, d *daemon) *window {
	w := &window{d: d, e: e, start: time.Now(), procs: e.processes(), cpus0: map[string]time.Duration{}, noise: startNoiseProbe(e.rdb)}
	w.procs["delaybridge"] = d.PID()
	w.redis, _ = e.redisCounters(ctx)
	w.cpu0 = d.cpu()
	for name, pid := range w.procs {
		w.cpus0[name] = processCPU(pid)
	}
	return w
}

// end fills the daemon's CPU and RSS and Redis's rates into r.
func (w *window) end(ctx context.Context, r *Scenario) {
	cpu := w.d.cpu() - w.cpu0
	span := time.Since(w.start)
	r.Notes = append(r.Notes, w.noise.stop())
	r.CPU = map[string]float64{}
	for name, pid := range w.procs {
		r.CPU[name] = round2((processCPU(pid) - w.cpus0[name]).Seconds())
	}
	after, err := w.e.redisCounters(ctx)
	r.DaemonCPU = round2(cpu.Seconds())
	r.DaemonRSS = w.d.peakRSS()
	r.WindowS = round2(span.Seconds())
	if err == nil {
		r.RedisCmds = perSecond(float64(after.total-w.redis.total), span)
		r.RedisCalls = perSecond(float64(after.calls-w.redis.calls), span)
		r.RedisCPU = round2(after.cpu - w.redis.cpu)
		r.RedisWork = after.work - w.redis.work
	}
}

// noiseProbe measures how late this machine wakes a sleeping goroutine
// during a window (noiseSleep sleeps), the floor under any lateness and a
// sign of other load on a shared machine, and how long a Redis PING takes
// (every 50 ms): Redis runs one command at a time, so another client's slow
// command delays every claim. It costs little CPU itself.
type noiseProbe struct {
	stopc chan struct{}
	done  chan [2][]float64
	load0 string
}

const noiseSleep = 5 * time.Millisecond

func startNoiseProbe(rdb *redis.Client) *noiseProbe {
	p := &noiseProbe{stopc: make(chan struct{}), done: make(chan [2][]float64, 1), load0: loadAvg()}
	pings := make(chan []float64, 1)
	go func() {
		var rtt []float64
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-p.stopc:
				pings <- rtt
				return
			case <-tick.C:
			}
			t := time.Now()
			if rdb.Ping(context.Background()).Err() == nil {
				rtt = append(rtt, float64(time.Since(t))/1e6)
			}
		}
	}()
	go func() {
		var over []float64
		for {
			select {
			case <-p.stopc:
				p.done <- [2][]float64{over, <-pings}
				return
			default:
			}
			t := time.Now()
			time.Sleep(noiseSleep)
			over = append(over, float64(time.Since(t)-noiseSleep)/1e6)
		}
	}()
	return p
}

// stop ends the probe and describes what it saw.
func (p *noiseProbe) stop() string {
	close(p.stopc)
	got := <-p.done
	l, r := latenessOf(got[0]), latenessOf(got[1])
	return fmt.Sprintf("machine noise: a 5 ms sleep overshot by p50 %.2f ms, p99 %.2f ms, max %.1f ms; redis PING p50 %.2f ms, p99 %.2f ms, max %.1f ms; load average %s -> %s; CPU pressure (some, avg10) %s",
		l.P50, l.P99, l.Max, r.P50, r.P99, r.Max, p.load0, loadAvg(), cpuPressure())
}

// cpuPressure is the share of the last 10 s in which some runnable task
// waited for a CPU (Linux PSI), "?" where unavailable.
func cpuPressure() string {
	b, err := os.ReadFile("/proc/pressure/cpu")
	if err != nil {
		return "?"
	}
	for _, f := range strings.Fields(strings.SplitN(string(b), "\n", 2)[0]) {
		if v, ok := strings.CutPrefix(f, "avg10="); ok {
			return v + "%"
		}
	}
	return "?"
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return f[0]
}

// cpuMeter measures the CPU of the processes of processes() over a span.
type cpuMeter struct {
	procs map[string]int
	start map[string]time.Duration
}

func (e *env) meterCPU() *cpuMeter {
	m := &cpuMeter{procs: e.processes(), start: map[string]time.Duration{}}
	for name, pid := range m.procs {
		m.start[name] = processCPU(pid)
	}
	return m
}

// used is the CPU seconds each process used since meterCPU.
func (m *cpuMeter) used() map[string]float64 {
	out := map[string]float64{}
	for name, pid := range m.procs {
		out[name] = round2((processCPU(pid) - m.start[name]).Seconds())
	}
	return out
}

// processes finds the other processes whose CPU a scenario reports: this
// bench, the Redis server of the -redis URL and RabbitMQ's Erlang VM when
// they run on this machine, and devkafka when running.
func (e *env) processes() map[string]int {
	out := map[string]int{"bench": os.Getpid()}
	if e.devkafka != nil {
		out["devkafka"] = e.devkafka.cmd.Process.Pid
	}
	_, port, _ := strings.Cut(e.redisAddr, ":")
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range dirs {
		comm, err := os.ReadFile(dir + "/comm")
		if err != nil {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(dir))
		switch strings.TrimSpace(string(comm)) {
		case "redis-server":
			cmdline, _ := os.ReadFile(dir + "/cmdline")
			if port != "" && strings.Contains(string(cmdline), ":"+port) {
				out["redis"] = pid
			}
		case "beam.smp":
			out["rabbitmq"] = pid
		}
	}
	return out
}
