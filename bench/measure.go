package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

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
		r.RedisScriptCalls = after.calls - w.redis.calls
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
// bench, the Redis server of the -redis URL and RabbitMQ's Erlang VM (the
// one that boots rabbit) when they run on this machine, and devkafka when running.
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
			// rabbitmqctl runs a beam.smp of its own for a moment: only
			// the broker's boots rabbit.
			cmdline, _ := os.ReadFile(dir + "/cmdline")
			if strings.Contains(string(cmdline), "rabbit\x00boot") {
				out["rabbitmq"] = pid
			}
		}
	}
	return out
}
