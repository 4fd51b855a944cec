package forwarder

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/queue"
	"github.com/delaybridge/delaybridge/sinks"
)

// freshSeries is every series a Forwarder of the topics orders and reminders
// must export before anything happened, each at 0. The list is written out
// rather than derived from the code, so a series the code stops creating
// fails here; the alerts and the dashboard rely on these (deploy/).
var freshSeries = func() []string {
	out := []string{"delaybridge_replicas",
		// Redis's memory, set by the daemon's INFO memory watch.
		"delaybridge_redis_full", "delaybridge_redis_maxmemory_bytes", "delaybridge_redis_used_memory_bytes"}
	for _, op := range []string{"ack", "claim", "extend", "heartbeat", "reap", "release", "retry", "stats", "stranded", "acquire", "limits", "held", "env"} {
		out = append(out, `delaybridge_redis_errors_total{op="`+op+`"}`)
	}
	for _, topic := range []string{"orders", "reminders"} {
		tl := `{topic="` + topic + `"}`
		for _, name := range []string{
			"claimed_total", "published_total", "retried_total", "dead_total", "released_total", "reaped_total",
			"lateness_seconds", "publish_duration_seconds", "oldest_overdue_seconds", "owned_slots",
			"stranded_messages", "topic_paused", "topic_rate_limit", "topic_hold_queue_messages",
			"recurrences", "recurrence_ticks_delivered_total", "recurrence_ticks_skipped_total", "fair_keys", "dedup_ids",
		} {
			out = append(out, "delaybridge_"+name+tl)
		}
		for _, r := range []string{"queue", "rate"} {
			out = append(out, `delaybridge_topic_held{reason="`+r+`",topic="`+topic+`"}`,
				`delaybridge_topic_held_seconds_total{reason="`+r+`",topic="`+topic+`"}`)
		}
		for _, o := range []string{"broker", "connection", "permanent", "timeout"} {
			out = append(out, `delaybridge_publish_failures_total{outcome="`+o+`",topic="`+topic+`"}`)
		}
		for _, s := range []string{"dead", "inflight", "overdue", "retrying", "scheduled"} {
			out = append(out, `delaybridge_backlog_messages{state="`+s+`",topic="`+topic+`"}`)
		}
	}
	sort.Strings(out)
	return out
}()

// gatherSeries returns every series of reg as name{label="value",…} (labels
// sorted, as the registry gives them) with its value: a counter's or gauge's
// value, a histogram's sample count.
func gatherSeries(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+"="+strconv.Quote(l.GetValue()))
			}
			name := f.GetName()
			if len(ls) > 0 {
				name += "{" + strings.Join(ls, ",") + "}"
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out[name] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[name] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				out[name] = float64(m.GetHistogram().GetSampleCount())
			default:
				t.Errorf("%s: unexpected type %s", name, f.GetType())
			}
		}
	}
	return out
}

func TestFreshForwarderExportsEverySeriesAtZero(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	// No Redis call happens before Run: the queue's client is never dialled.
	q := queue.New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}))
	defer q.Client().Close()
	sink := newRecordSink()
	_, err := New(Options{
		Queue: q,
		Topics: []Topic{
			{Topic: queue.Topic{Name: "orders", Prefix: "unused"}, Sink: sink},
			{Topic: queue.Topic{Name: "reminders", Prefix: "unused", Slots: 4}, Sink: sink},
		},
		Metrics: NewMetrics(reg),
	})
	if err != nil {
		t.Fatal(err)
	}
	got := gatherSeries(t, reg)
	var names []string
	for name, v := range got {
		names = append(names, name)
		if v != 0 {
			t.Errorf("%s = %v before anything happened, want 0", name, v)
		}
	}
	sort.Strings(names)
	if diff := cmp.Diff(freshSeries, names); diff != "" {
		t.Errorf("series of a fresh forwarder (-want +got):\n%s", diff)
	}
}

// TestOutcomesAreTheInitialisedOnes keeps failureOutcomes complete: every
// kind of error outcomeOf sorts maps to a value created at 0.
func TestOutcomesAreTheInitialisedOnes(t *testing.T) {
	t.Parallel()
	for _, err := range []error{
		sinks.ErrPermanent, sinks.ErrNotConnected, sinks.ErrClosed,
		context.Canceled, context.DeadlineExceeded, errors.New("nack"),
	} {
		if o := outcomeOf(err).String(); !slices.Contains(failureOutcomes, o) {
			t.Errorf("outcomeOf(%v) = %q, not in failureOutcomes %q", err, o, failureOutcomes)
		}
	}
}

// TestRedisOpsAreTheInitialisedOnes reads the package's source for the op
// names it counts Redis errors under (RedisErrs.WithLabelValues("op") and
// redisRetry(ctx, "op", …)) and fails for one that redisOps does not create
// at 0, or one of redisOps that no code uses.
func TestRedisOpsAreTheInitialisedOnes(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			arg := -1
			switch fn := call.Fun.(type) {
			case *ast.SelectorExpr:
				if x, ok := fn.X.(*ast.SelectorExpr); ok && x.Sel.Name == "RedisErrs" && fn.Sel.Name == "WithLabelValues" {
					arg = 0
				}
				if fn.Sel.Name == "redisRetry" {
					arg = 1
				}
			}
			if arg < 0 || len(call.Args) <= arg {
				return true
			}
			if lit, ok := call.Args[arg].(*ast.BasicLit); ok && lit.Kind == token.STRING {
				op, _ := strconv.Unquote(lit.Value)
				used[op] = true
			}
			return true
		})
	}
	if len(used) < 5 {
		t.Fatalf("found only the Redis ops %v in the source: the test no longer recognises the call sites", used)
	}
	for op := range used {
		if !slices.Contains(redisOps, op) {
			t.Errorf("Redis errors are counted under op %q, which redisOps does not create at 0", op)
		}
	}
	for _, op := range redisOps {
		if !used[op] {
			t.Errorf("redisOps creates op %q, which no code counts", op)
		}
	}
}
