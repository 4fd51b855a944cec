// Command bench measures delaybridge against the ceilings of the systems it
// sits between, on the machine it runs on.
//
// It starts the built daemon (bin/delaybridge) as a separate process against
// the local Redis and RabbitMQ (and bin/devkafka for Kafka), schedules
// numbered messages with its own producer and receives them with its own
// consumer, and measures in the same run the raw ceilings: pipelined
// publisher confirms straight to RabbitMQ (same message size, same consumer
// attached), kafka-go writes straight to devkafka, and batched Lua claims and
// acks straight from Redis through the queue package. It prints a table and
// writes the results as JSON.
//
//	go run ./bench -redis-server auto -out bench/results.json               # make bench
//	go run ./bench -redis-server auto -quick -out bench/results-quick.json  # make bench-quick
//
// With -redis-server the bench starts a Redis of its own (no other client
// can stall it); without, it uses -redis. Every scenario uses its own key
// prefix, exchange, queue and Kafka topic and removes them afterwards. See
// docs/performance.md for what each number means.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// options are the command line.
type options struct {
	quick      bool
	out        string
	run        string
	bin        string
	devkafka   string
	redisURL   string
	redisBin   string
	appendonly bool
	amqpURL    string
	size       int
	rawWindow  int
	dumpDir    string
	keepLogs   bool
	daemonEnv  envFlag
	sizes      sizes
	scenarioID string // random suffix shared by the names of one run
}

// sizes are how big each scenario is.
type sizes struct {
	steadyRate   int           // messages/s falling due in steady and backlog
	steadyFor    time.Duration // how long they fall due
	steadySlots  int
	burst        int // messages due at the same millisecond
	burstSlots   int
	backlogFar   int           // messages scheduled hours ahead in backlog
	idleSlots    int           // over idleTopics topics
	idleFor      time.Duration // measured with nothing due
	idleProbes   int           // raw ZADDs written after idleFor
	idleProbeFor time.Duration // over this long
	memory       int           // messages of memory, each way
	stallRate    int           // kafka-stall's messages/s
	kafkaBurst   int
	intake       int           // messages waiting in the intake queue
	fairBurst    int           // fairness's burst, due at one instant over burstSlots
	fairRate     int           // fairness's trickle, messages/s in one slot
	fairShare    int           // fair-share's burst of one key, due at one instant over burstSlots
	recurring    int           // recurrences (and one-off messages) of recurring
	recurEvery   time.Duration // their period
	knobsBurst   int           // each of knobs' bursts, due at one instant over burstSlots
}

var fullSizes = sizes{
	steadyRate: 2000, steadyFor: 15 * time.Second, steadySlots: 8,
	burst: 100_000, burstSlots: 8,
	backlogFar: 10_000_000,
	idleSlots:  1024, idleFor: 10 * time.Second, idleProbes: 200, idleProbeFor: 5 * time.Second,
	memory:     100_000,
	kafkaBurst: 100_000,
	stallRate:  200,
	intake:     100_000,
	fairBurst:  100_000,
	fairRate:   200,
	fairShare:  100_000,
	recurring:  10_000, recurEvery: time.Minute,
	knobsBurst: 30_000,
}

var quickSizes = sizes{
	steadyRate: 2000, steadyFor: 3 * time.Second, steadySlots: 8,
	burst: 10_000, burstSlots: 8,
	backlogFar: 50_000,
	idleSlots:  1024, idleFor: 3 * time.Second, idleProbes: 100, idleProbeFor: 2 * time.Second,
	memory:     100_000, // cheap: the size the target is stated for
	kafkaBurst: 10_000,
	stallRate:  200,
	intake:     20_000,
	fairBurst:  30_000, // 10,000 drain in under a second: too few trickle messages
	fairRate:   200,
	fairShare:  10_000,
	recurring:  1_000, recurEvery: 5 * time.Second,
	knobsBurst: 4_000,
}

// envFlag collects repeated -daemon-env NAME=VALUE flags.
type envFlag []string

func (e *envFlag) String() string { return strings.Join(*e, ",") }

func (e *envFlag) Set(v string) error {
	name, _, ok := strings.Cut(v, "=")
	if !ok || !(strings.HasPrefix(name, "DELAYBRIDGE_") || strings.HasPrefix(name, "OTEL_") ||
		name == "GOGC" || name == "GOMAXPROCS" || name == "GOMEMLIMIT") {
		return errors.New("want DELAYBRIDGE_NAME=value (or OTEL_NAME, GOGC, GOMAXPROCS, GOMEMLIMIT)")
	}
	*e = append(*e, v)
	return nil
}

func main() {
	var o options
	flag.BoolVar(&o.quick, "quick", false, "shrink every scenario to finish in under a minute")
	flag.StringVar(&o.out, "out", "", "write the results as JSON to this file")
	flag.StringVar(&o.run, "run", defaultRun, "comma list of scenarios to run (also: intake, intake-delay, raw-rabbitmq, fairness-raw, knobs, spread)")
	flag.StringVar(&o.bin, "bin", "bin/delaybridge", "the daemon binary (make build)")
	flag.StringVar(&o.devkafka, "devkafka", "bin/devkafka", "the local Kafka broker binary (make build)")
	flag.StringVar(&o.redisURL, "redis", envOr("DELAYBRIDGE_TEST_REDIS_URL", "redis://127.0.0.1:6379/0"), "Redis URL")
	flag.StringVar(&o.redisBin, "redis-server", "", "start a private Redis from this redis-server binary (\"auto\": from PATH) instead of using -redis, so other clients of a shared Redis cannot stall it")
	flag.BoolVar(&o.appendonly, "redis-appendonly", false, "start the private server (-redis-server) with appendonly yes, appendfsync everysec: with -daemon-env DELAYBRIDGE_REDIS_WAIT_AOF=true, what WAITAOF costs (docs/installation.md)")
	flag.StringVar(&o.amqpURL, "amqp", envOr("DELAYBRIDGE_TEST_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/"), "RabbitMQ URL")
	flag.IntVar(&o.size, "size", 128, "message body size in bytes")
	flag.IntVar(&o.rawWindow, "raw-window", 8000, "unconfirmed messages the raw RabbitMQ publisher keeps in flight")
	flag.StringVar(&o.dumpDir, "dump", "", "write every message's due time and lateness to <dir>/<scenario>.csv")
	flag.BoolVar(&o.keepLogs, "keep-logs", false, "keep the daemon logs (their paths are printed)")
	flag.Var(&o.daemonEnv, "daemon-env", "extra DELAYBRIDGE_NAME=value (or OTEL_NAME for tracing, GOGC, GOMAXPROCS, GOMEMLIMIT) for the daemon (repeatable)")
	steadySlots := flag.Int("steady-slots", 0, "slots of the steady and backlog topic (0: the scenario's default)")
	backlogFar := flag.Int("backlog-far", 0, "far-future messages waiting in backlog (0: 10,000,000, with -quick 50,000)")
	markdown := flag.String("markdown", "", "print the results in this results.json as a Markdown table (for docs/performance.md) and exit")
	flag.Parse()
	if *markdown != "" {
		if err := printMarkdown(os.Stdout, *markdown); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if o.size < minBody {
		fmt.Fprintf(os.Stderr, "bench: -size must be at least %d\n", minBody)
		os.Exit(2)
	}
	o.sizes = fullSizes
	if o.quick {
		o.sizes = quickSizes
	}
	if *steadySlots > 0 {
		o.sizes.steadySlots = *steadySlots
	}
	if *backlogFar > 0 {
		o.sizes.backlogFar = *backlogFar
	}
	o.scenarioID = randomID()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.redisBin != "" {
		srv, err := startRedis(o.redisBin, o.appendonly)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		o.redisURL = srv.url
		err = run(ctx, o)
		srv.stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// Report is what -out writes.
type Report struct {
	Quick     bool      `json:"quick"`
	Started   time.Time `json:"started"`
	GoVersion string    `json:"go_version"`
	CPUs      int       `json:"cpus"`
	// CPUModel and GOMAXPROCS are the machine's (see machine.go).
	CPUModel   string     `json:"cpu_model,omitempty"`
	GOMAXPROCS int        `json:"gomaxprocs,omitempty"`
	BodyBytes  int        `json:"body_bytes"`
	Scenarios  []Scenario `json:"scenarios"`
}

// defaultRun is what -run runs unless told otherwise: every scenario of
// issue #15's targets, and those of later issues' (tracing: #41, fair-share: #50).
const defaultRun = "steady,tracing,burst,burst-spread,burst-harness,backlog,idle,idle-poll,memory,kafka-burst,kafka-stall,rate-limited,rate-limit-cost,api,fairness,fair-share,recurring"

// scenarios in the order they run.
var scenarios = []struct {
	name string
	run  func(context.Context, *env) (Scenario, error)
}{
	{"steady", runSteady},
	{"tracing", runTracing},
	{"burst", runBurst},
	{"burst-spread", runBurstSpread},
	{"burst-harness", runBurstHarness},
	{"backlog", runBacklog},
	{"idle", runIdle},
	{"idle-poll", runIdlePoll},
	{"memory", runMemory},
	{"kafka-burst", runKafkaBurst},
	{"kafka-stall", runKafkaStall},
	{"rate-limited", runRateLimited},
	{"rate-limit-cost", runRateLimitCost},
	{"api", runAPI},
	{"fairness", runFairness},
	{"fair-share", runFairShare},
	{"recurring", runRecurring},
	// Not run by default: the intake's scenarios (about 3 more minutes
	// at full size on the 2-core VM), the raw ceiling alone, to study it,
	// knobs (2–3.5 more minutes: one daemon per setting), and spread,
	// which needs a Redis of its own (-redis-server).
	{"intake", runIntake},
	{"intake-delay", runIntakeDelay},
	{"raw-rabbitmq", runRawRabbit},
	{"fairness-raw", runFairnessRaw},
	{"knobs", runKnobs},
	{"spread", runSpread},
}

func run(ctx context.Context, o options) error {
	want := map[string]bool{}
	for _, n := range strings.Split(o.run, ",") {
		if n = strings.TrimSpace(n); n != "" {
			want[n] = true
		}
	}
	for n := range want {
		known := false
		for _, s := range scenarios {
			known = known || s.name == n
		}
		if !known {
			return fmt.Errorf("unknown scenario %q", n)
		}
	}
	e, err := newEnv(ctx, o)
	if err != nil {
		return err
	}
	defer e.close()

	rep := Report{Quick: o.quick, Started: time.Now().UTC(), GoVersion: runtime.Version(), BodyBytes: o.size}
	rep.machine()
	var failed []string
	for _, s := range scenarios {
		if !want[s.name] || ctx.Err() != nil {
			continue
		}
		fmt.Fprintf(os.Stderr, "== %s\n", s.name)
		start := time.Now()
		res, err := s.run(ctx, e)
		res.Name = s.name
		if err != nil {
			fmt.Fprintf(os.Stderr, "   %s failed: %v\n", s.name, err)
			res.Error = err.Error()
			failed = append(failed, s.name)
		}
		fmt.Fprintf(os.Stderr, "   done in %s\n", time.Since(start).Round(100*time.Millisecond))
		rep.Scenarios = append(rep.Scenarios, res)
	}
	printTable(os.Stdout, rep.Scenarios)
	if o.out != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(o.out, append(b, '\n'), 0o644); err != nil {
			return fmt.Errorf("write results: %w", err)
		}
		fmt.Fprintf(os.Stderr, "results written to %s\n", o.out)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if len(failed) > 0 {
		return fmt.Errorf("scenarios failed: %s", strings.Join(failed, ", "))
	}
	return nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
