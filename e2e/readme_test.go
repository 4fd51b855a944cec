package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
	"github.com/delaybridge/delaybridge/internal/testing/gosnippet"
	"github.com/delaybridge/delaybridge/internal/testing/redistest"
	"github.com/delaybridge/delaybridge/queue"
)

// readmeDocs are the documents whose code blocks the in-order run reads,
// in that order: README.md, then the pages its reference sections moved
// to, so a block keeps its place after the ones whose state it uses.
var readmeDocs = []string{"README.md", "docs/installation.md", "docs/cli.md", "docs/flow-control.md", "docs/api.md", "docs/console.md"}

// readmeCode is one code block of README.md (or of one of readmeDocs): an
// indented one (lang "") or a fenced one, its lines without the indent.
type readmeCode struct {
	file  string // of readmeDocs
	line  int    // of its first line, 1-based
	lang  string
	lines []string
}

func (c readmeCode) first() string { return strings.TrimSpace(c.lines[0]) }

// readmeCodeBlocks returns every code block of readmeDocs in order.
func readmeCodeBlocks(t *testing.T) []readmeCode {
	t.Helper()
	var out []readmeCode
	for _, file := range readmeDocs {
		doc, err := os.ReadFile(filepath.Join("..", file))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, codeBlocks(file, string(doc))...)
	}
	return out
}

// codeBlocks returns the code blocks of one Markdown document in order.
func codeBlocks(file, doc string) []readmeCode {
	var out []readmeCode
	lines := strings.Split(doc, "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if lang, ok := strings.CutPrefix(strings.TrimSpace(l), "```"); ok {
			c := readmeCode{file: file, line: i + 2, lang: lang}
			for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
				c.lines = append(c.lines, lines[i])
			}
			out = append(out, c)
			continue
		}
		indent := len(l) - len(strings.TrimLeft(l, " "))
		if indent < 4 || strings.TrimSpace(l) == "" || i == 0 || strings.TrimSpace(lines[i-1]) != "" {
			continue
		}
		c := readmeCode{file: file, line: i + 1}
		for ; i < len(lines); i++ {
			l := lines[i]
			if strings.TrimSpace(l) != "" && len(l)-len(strings.TrimLeft(l, " ")) < indent {
				break
			}
			c.lines = append(c.lines, strings.TrimRight(strings.TrimPrefix(l, strings.Repeat(" ", indent)), " "))
		}
		for len(c.lines) > 0 && c.lines[len(c.lines)-1] == "" {
			c.lines = c.lines[:len(c.lines)-1]
		}
		i--
		out = append(out, c)
	}
	return out
}

// readmeRun is what the in-order run of the README knows: the names it
// uses instead of the README's fixed ones, and the files it provides.
type readmeRun struct {
	name      string // key prefix, queue (routing key)
	dir       string // the test's temporary folder
	logFile   string
	apiPort   int
	conPort   int
	hbPort    int // the recurrence block's daemon's /readyz
	apiToken  string
	redisAddr string
	goDir     string // the Go snippet's program, in e2e (inside the module)
}

// readmeDecision is what the test does with one README block, matched by
// its first line: run it (script gives the shell lines, want what the
// output must then contain) or not, with the reason.
type readmeDecision struct {
	first  string
	script func(r *readmeRun, lines []string) []string
	want   []string
	notRun string
	// needs names the programs (or shell tests) the block needs besides
	// bash: without one the test fails, naming it (make test installs
	// what it can).
	needs []string
}

// replaceAll applies old/new pairs to every line.
func replaceAll(lines []string, pairs ...string) []string {
	out := make([]string, len(lines))
	r := strings.NewReplacer(pairs...)
	for i, l := range lines {
		out[i] = r.Replace(l)
	}
	return out
}

// heredoc runs a program read from a file the script writes first.
func heredoc(file string, lines []string, run string) []string {
	out := []string{"cat >" + file + " <<'README_EOF'"}
	out = append(out, lines...)
	return append(out, "README_EOF", run)
}

// readmeDecisions has one entry per code block of readmeDocs, in that
// order. A block added to one of them without an entry here fails the test.
func readmeDecisions() []readmeDecision {
	return []readmeDecision{{
		first: "ZADD dq:{orders:0} 1764000000000",
		script: func(r *readmeRun, lines []string) []string {
			// Already due: the quick start's daemon delivers it first.
			return replaceAll(lines, "ZADD dq:", `redis-cli -u "$DELAYBRIDGE_REDIS_URL" ZADD `+r.name+":")
		},
		needs: []string{"redis-cli"},
	}, {
		first: "make demo",
		script: func(r *readmeRun, lines []string) []string {
			// make demo is make build (the suite built the binary) and
			// scripts/demo.sh: services (running) and this program, which
			// uses a prefix and exchange of its own. make test, the next
			// line, is the suite this test belongs to: not run.
			return []string{`go run ./examples/demo -sink amqp -daemon bin/delaybridge -redis "$DELAYBRIDGE_REDIS_URL" -amqp "$DELAYBRIDGE_AMQP_URL"`}
		},
		want: []string{"all 5 arrived on time"},
	}, {
		first: "make build",
		script: func(r *readmeRun, lines []string) []string {
			var out []string
			for _, l := range lines {
				if strings.HasPrefix(l, "make build") {
					continue // the suite built the binary
				}
				out = append(out, l)
			}
			return replaceAll(out, "/tmp/delaybridge.log", r.logFile,
				"amqpqueue declare orders", "amqpqueue declare "+r.name,
				"amqpqueue get orders", "amqpqueue get "+r.name,
				"amqpqueue delete orders", "amqpqueue delete "+r.name)
		},
		want: []string{"topic orders (amqp): ok", `{"order":42}`, `"event":"payment-timeout"`, "x-delaybridge-id=", "deleted queue ", "done: forget topic orders"},
	}, {
		first: "q := queue.New(",
		script: func(r *readmeRun, lines []string) []string {
			// The test's: the daemon forwarding orders as an envelope
			// topic the snippet reads from the registry (without one it
			// stops at queue.ErrUnknownTopic, as its comment says), and the
			// program around the block, inside the module.
			main := filepath.Join("e2e", r.goDir, "main.go")
			src := gosnippet.Program(strings.Join(lines, "\n"), r.name, r.redisAddr)
			out := []string{
				"DELAYBRIDGE_TOPIC_ORDERS_FORMAT=envelope bin/delaybridge run 2>>" + r.logFile + " & GO_DAEMON=$!",
				`for i in $(seq 600); do [ "$(redis-cli -u "$DELAYBRIDGE_REDIS_URL" HEXISTS ` + r.name + `:topics orders)" = 1 ] && break; sleep 0.1; done`,
				"mkdir -p " + filepath.Dir(main),
			}
			out = append(out, heredoc(main, strings.Split(src, "\n"), "go run "+main)...)
			return append(out, "kill $GO_DAEMON; wait $GO_DAEMON", "bin/delaybridge topics forget orders --yes")
		},
		want:  []string{"scheduled order-42/payment-timeout in slot 0", "cancelled: true"},
		needs: []string{"redis-cli"},
	}, {
		first: "export DELAYBRIDGE_TOPICS=orders DELAYBRIDGE_TOPIC_ORDERS_FORMAT=envelope",
		script: func(r *readmeRun, lines []string) []string {
			// --watch redraws until interrupted; invoice.json is the
			// test's (the README's reader has their own).
			return replaceAll(lines, "stats --watch", "stats", "< invoice.json", "< "+filepath.Join(r.dir, "invoice.json"))
		},
		want: []string{"order-42", "invoice-9"},
	}, {
		first: "import time, zlib, redis",
		script: func(r *readmeRun, lines []string) []string {
			// The test's: the cancel the block's comment gives.
			lines = append(lines, `r.zrem(f"dq:{{orders:{slot}}}", member)`, `print("zadd and zrem in slot", slot)`)
			lines = replaceAll(lines, "redis.Redis()", `redis.Redis.from_url(__import__("os").environ["DELAYBRIDGE_REDIS_URL"])`,
				`f"dq:{{`, `f"`+r.name+`:{{`, `"dq:wake"`, `"`+r.name+`:wake"`)
			return heredoc(filepath.Join(r.dir, "zadd.py"), lines, pythonWithRedis()+" "+filepath.Join(r.dir, "zadd.py"))
		},
		want:  []string{"zadd and zrem in slot 4"},
		needs: []string{pythonWithRedis() + " -c 'import redis'"},
	}, {
		first: "export DELAYBRIDGE_TOPICS=orders,digests,heartbeats",
		script: func(r *readmeRun, lines []string) []string {
			// The queues are the test's (hb and digests: the digests'
			// routing key is the test's, set with the orders' below). Then the
			// test's: a daemon running the block's topics is ready (it
			// was not: the heartbeats' own queue was missing), check says
			// ok, a tick arrives in the heartbeats' queue, and everything
			// the block and the daemon left goes.
			hb, digests := r.name+"-hb", r.name+"-digests"
			out := replaceAll(lines, "amqpqueue declare hb", "amqpqueue declare "+hb, "ROUTING_KEY=hb", "ROUTING_KEY="+hb,
				"amqpqueue declare digests", "amqpqueue declare "+digests)
			readyz := fmt.Sprintf("http://127.0.0.1:%d/readyz", r.hbPort)
			return append(out,
				"DELAYBRIDGE_TOPICS=digests,heartbeats bin/delaybridge check",
				fmt.Sprintf("DELAYBRIDGE_TOPICS=digests,heartbeats DELAYBRIDGE_HTTP_ADDR=127.0.0.1:%d bin/delaybridge run 2>>%s & HB_DAEMON=$!", r.hbPort, r.logFile),
				"for i in $(seq 300); do [ \"$(curl -s -o /dev/null -w '%{http_code}' "+readyz+")\" = 200 ] && break; sleep 0.1; done",
				"curl -sS -o /dev/null -w 'heartbeats readyz %{http_code}\\n' "+readyz,
				"for i in $(seq 60); do HB=$(go run ./examples/amqpqueue get "+hb+"); case $HB in *ping*) echo \"$HB\"; break;; esac; sleep 0.5; done",
				"kill $HB_DAEMON; wait $HB_DAEMON",
				"bin/delaybridge recur rm heartbeats hb",
				"bin/delaybridge topics forget heartbeats --yes",
				"bin/delaybridge topics forget digests --yes",
				"go run ./examples/amqpqueue delete "+hb,
				"go run ./examples/amqpqueue delete "+digests)
		},
		want:  []string{"daily-digest", "Europe/Berlin", "topic heartbeats (amqp): ok", "topic digests (amqp): ok", "heartbeats readyz 200", "ping  id=hb@", "x-delaybridge-recurrence=hb"},
		needs: []string{"curl"},
	}, {
		first:  "checkout         POST /orders",
		notRun: "a drawing of one trace (request, delay, publish, consumer), not a command; e2e/trace_test.go checks such a trace against Jaeger",
	}, {
		first: "bin/delaybridge dead list orders",
		script: func(r *readmeRun, lines []string) []string {
			// The test's: a dead order-42 to repair. The quick start
			// deleted the queue the default exchange routed orders to, so
			// the broker returns it (NO_ROUTE) and it dies.
			out := []string{
				"DELAYBRIDGE_TOPICS=orders DELAYBRIDGE_MAX_ATTEMPTS=1 bin/delaybridge run 2>>" + r.logFile + " & DAEMON=$!",
				"bin/delaybridge schedule orders --in 0s --id order-42 '{\"order\":42}'",
				"for i in $(seq 600); do bin/delaybridge get orders --id order-42 | grep -q 'state *dead' && break; sleep 0.1; done",
				"kill $DAEMON; wait $DAEMON",
			}
			out = append(out, lines...)
			// The test's: the requeued order-42 would be due at once.
			return append(out, "bin/delaybridge cancel orders --id order-42")
		},
		want: []string{"orders: 1 dead", "NO_ROUTE", "cancelled id order-42"},
	}, {
		first:  "make test      # services + make lint",
		notRun: "make's development targets: make test is the suite this test belongs to (it runs lint, chaos and the build itself), make fuzz takes minutes, make services-stop would stop the services other tests use",
	}, {
		first:  "kubectl create namespace delaybridge",
		notRun: "needs Kubernetes and Helm; the chart is rendered and checked by the deploy module's tests",
	}, {
		first:  "make -C <valkey source tree>",
		notRun: "builds another server from a source tree the developer provides, then make compat runs this suite against it: run and recorded by hand, like make bench",
	}, {
		first:  "docker build \\",
		notRun: "needs a Docker engine; its build stage's command (scripts/build-static.sh) is run offline by deploy's TestBuildStaticOfflineStampsTheVersionFile",
	}, {
		first:  "sh scripts/build-static.sh /tmp/delaybridge",
		notRun: "the very command deploy's TestBuildStaticOfflineStampsTheVersionFile runs offline and checks (the static binary prints the VERSION file's release)",
	}, {
		first: "delaybridge ls orders --state retrying --limit 50",
		script: func(r *readmeRun, lines []string) []string {
			payload := filepath.Join(r.dir, "payload.bin")
			// The test's: a raw topic legacy holding payload.bin, and the
			// cursor of a first page.
			out := []string{
				"export DELAYBRIDGE_TOPICS=$DELAYBRIDGE_TOPICS,legacy",
				"printf 'legacy\\0payload' >" + payload,
				"LEGACY_ID=$(bin/delaybridge schedule legacy --in 1h <" + payload + " | awk '{print $2}')",
				"bin/delaybridge schedule orders --in 1h --id order-42 '{\"order\":42}'",
				"CURSOR=$(bin/delaybridge ls orders --limit 1 --json | grep -o '\"next\":\"[^\"]*' | cut -d'\"' -f4)",
			}
			out = append(out, replaceAll(lines, "<cursor>", "\"$CURSOR\"", "payload.bin", payload, "5f0c…", "$LEGACY_ID")...)
			return append(out, "bin/delaybridge cancel legacy --member-file "+payload, "bin/delaybridge cancel orders --id order-42")
		},
		want: []string{"state     scheduled", "live replicas"},
	}, {
		first: "DELAYBRIDGE_TOPIC_REMINDERS_RATE_LIMIT=450",
		script: func(r *readmeRun, lines []string) []string {
			// A fragment of configuration: check says it is valid (with
			// the test's hold queue), and the run-time commands the
			// example gives after it run.
			out := []string{"(", "export DELAYBRIDGE_TOPICS=reminders DELAYBRIDGE_TOPIC_REMINDERS_ROUTING_KEY=" + r.name}
			for _, l := range replaceAll(lines, "HOLD_QUEUE=reminders", "HOLD_QUEUE="+r.name) {
				out = append(out, "export "+l)
			}
			return append(out,
				"go run ./examples/amqpqueue declare "+r.name,
				"bin/delaybridge check",
				"delaybridge limit reminders --rate 2000",
				"delaybridge limit reminders --off",
				"go run ./examples/amqpqueue delete "+r.name,
				")")
		},
		want: []string{"configuration: ok", "reminders: rate limit 2000/s"},
	}, {
		first: "DELAYBRIDGE_TOPIC_NOTIFY_FORMAT=envelope",
		script: func(r *readmeRun, lines []string) []string {
			// A fragment of configuration: check says a fair topic so
			// configured is valid (routed to the test's queue).
			out := []string{"(", "export DELAYBRIDGE_TOPICS=notify DELAYBRIDGE_TOPIC_NOTIFY_ROUTING_KEY=" + r.name}
			for _, l := range lines {
				out = append(out, "export "+l)
			}
			return append(out,
				"go run ./examples/amqpqueue declare "+r.name,
				"bin/delaybridge check",
				"go run ./examples/amqpqueue delete "+r.name,
				")")
		},
		want: []string{"configuration: ok", "topic notify (amqp): ok"},
	}, {
		first: "export API_TOKEN=$(head -c 16 /dev/urandom",
		script: func(r *readmeRun, lines []string) []string {
			// The block starts the daemon serving the API and calls it.
			// The test's: the API's port and the log file, and the
			// daemon's pid, to stop it after the Node.js block.
			api := fmt.Sprintf("127.0.0.1:%d", r.apiPort)
			out := replaceAll(lines, "127.0.0.1:8090", api, "/tmp/delaybridge.log", r.logFile)
			for i, l := range out {
				if strings.Contains(l, "bin/delaybridge run") && strings.HasSuffix(l, "&") {
					out[i] = l + " API_DAEMON=$!"
				}
			}
			return out
		},
		want: []string{`"id":"order-42"`, `"state":"scheduled"`},
	}, {
		first: "import json, os, urllib.error, urllib.request",
		script: func(r *readmeRun, lines []string) []string {
			file := filepath.Join(r.dir, "api.py")
			lines = replaceAll(lines, "127.0.0.1:8090", fmt.Sprintf("127.0.0.1:%d", r.apiPort))
			return heredoc(file, lines, "python3 "+file)
		},
		want:  []string{"(204, None)"},
		needs: []string{"python3"},
	}, {
		first: "// api.mjs (an ES module: top-level await)",
		script: func(r *readmeRun, lines []string) []string {
			file := filepath.Join(r.dir, "api.mjs")
			lines = replaceAll(lines, "127.0.0.1:8090", fmt.Sprintf("127.0.0.1:%d", r.apiPort))
			return append(heredoc(file, lines, "node "+file),
				// The test's: the API's daemon stops, and forgets orders.
				"kill $API_DAEMON; wait $API_DAEMON",
				"bin/delaybridge topics forget orders --yes")
		},
		want:  []string{"[ 204, null ]"},
		needs: []string{"node"},
	}, {
		first: "# beside the daemon, with the daemon's environment",
		script: func(r *readmeRun, lines []string) []string {
			// The test's: the console on its own port, in the background
			// until it answered once; the token file it reads.
			con := fmt.Sprintf("127.0.0.1:%d", r.conPort)
			tokenFile := filepath.Join(r.dir, "console-token")
			out := []string{"printf %s " + r.apiToken + " >" + tokenFile, "export DELAYBRIDGE_CONSOLE_ADDR=" + con}
			for _, l := range replaceAll(lines, "/run/secrets/console-token", tokenFile, " delaybridge console", " bin/delaybridge console") {
				if strings.HasSuffix(l, "delaybridge console") {
					l += " 2>>" + r.logFile + " & CONSOLE=$!"
				}
				out = append(out, l)
			}
			return append(out,
				"for i in $(seq 600); do curl -sf http://"+con+"/healthz >/dev/null && break; sleep 0.1; done",
				"curl -sS -o /dev/null -w 'console %{http_code}\\n' http://"+con+"/",
				"kill $CONSOLE; wait $CONSOLE || true",
				// The test's: what the README's examples leave.
				"bin/delaybridge cancel orders --id invoice-9")
		},
		want: []string{"console 200", "cancelled id invoice-9"},
	}}
}

// freePort is a loopback port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// have reports whether a needed program (or a shell test) works here.
// pythonWithRedis is the python3 that can import redis: the one on PATH,
// else Debian's (/usr/bin/python3, where scripts/python-redis.sh installs
// python3-redis when PATH's python3 is another installation).
func pythonWithRedis() string {
	for _, py := range []string{"python3", "/usr/bin/python3"} {
		if exec.Command(py, "-c", "import redis").Run() == nil {
			return py
		}
	}
	return "python3"
}

func have(need string) bool {
	if !strings.Contains(need, " ") {
		_, err := exec.LookPath(need)
		return err == nil
	}
	return exec.Command("bash", "-c", need+" >/dev/null 2>&1").Run() == nil
}

// TestReadmeExamplesRunInOrderAndLeaveNothing runs every runnable code
// block of README.md and of the pages of readmeDocs, in that order, in one
// shell, as a user pastes them
// after a fresh clone, starting with the quick start; each block not run
// is listed in readmeDecisions with the reason. It then checks what they
// leave: no key under its prefix, no queue, no process. Only what would
// collide with other tests is changed: the key prefix, the queue (the
// routing key), the ports, the log file and the binary (the one the suite
// built; `make build` is left out).
func TestReadmeExamplesRunInOrderAndLeaveNothing(t *testing.T) {
	t.Parallel()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	r := &readmeRun{name: "dbtest-readme-" + hex.EncodeToString(b), dir: t.TempDir(),
		apiPort: freePort(t), conPort: freePort(t), hbPort: freePort(t), apiToken: "readme-token-" + hex.EncodeToString(b)}
	r.logFile = filepath.Join(r.dir, "delaybridge.log")
	r.redisAddr, r.goDir = redistest.Options(t).Addr, "_"+r.name
	t.Cleanup(func() { os.RemoveAll(r.goDir) })
	// Whatever a failed run leaves is deleted (after the checks below).
	rdb := e2etest.ConnectRedis(t, r.name)
	t.Cleanup(func() { deleteQueue(r.name) })
	if err := os.WriteFile(filepath.Join(r.dir, "invoice.json"), []byte(`{"invoice":9}`), 0o600); err != nil {
		t.Fatal(err)
	}
	blocks, decisions := readmeCodeBlocks(t), readmeDecisions()
	var script, want []string
	for i, c := range blocks {
		if i >= len(decisions) || !strings.HasPrefix(c.first(), decisions[i].first) {
			t.Fatalf("%s line %d: block %d (%q) has no decision here: add one to readmeDecisions, in the order of readmeDocs (run it, or say why not)", c.file, c.line, i, c.first())
		}
		d := decisions[i]
		if d.notRun != "" {
			t.Logf("%s line %d not run: %s", c.file, c.line, d.notRun)
			continue
		}
		missing := ""
		for _, n := range d.needs {
			if !have(n) {
				missing = n
			}
		}
		if missing != "" {
			t.Errorf("%s line %d needs %s, which this machine lacks (make test installs what it can: scripts/python-redis.sh, scripts/chromium.sh)", c.file, c.line, missing)
			continue
		}
		script = append(script, fmt.Sprintf("echo '### %s line %d'", c.file, c.line))
		for _, l := range d.script(r, c.lines) {
			l = strings.ReplaceAll(l, "bin/delaybridge", binary)
			if strings.HasPrefix(l, "delaybridge ") {
				l = binary + strings.TrimPrefix(l, "delaybridge")
			}
			script = append(script, l)
		}
		want = append(want, d.want...)
	}
	if len(decisions) > len(blocks) {
		t.Fatalf("readmeDecisions has %d entries for the %d blocks of %v: remove the ones for blocks that are gone", len(decisions), len(blocks), readmeDocs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-e", "-c", strings.Join(script, "\n"))
	cmd.Dir = ".."
	cmd.Env = append(e2etest.CleanEnv(),
		"DELAYBRIDGE_REDIS_URL="+e2etest.RedisURL(),
		"DELAYBRIDGE_AMQP_URL="+e2etest.AMQPURL(),
		"DELAYBRIDGE_KEY_PREFIX="+r.name,
		"DELAYBRIDGE_TOPIC_ORDERS_ROUTING_KEY="+r.name,
		"DELAYBRIDGE_TOPIC_DIGESTS_ROUTING_KEY="+r.name+"-digests",
		"DELAYBRIDGE_HTTP_ADDR=127.0.0.1:0",
	)
	// Its own process group: whatever a block started in the background
	// is found (and ended) afterwards.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// A process a block leaves behind holds the output pipe: Run returns
	// this long after bash ended, and the check below finds it.
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if cmd.Process != nil && syscall.Kill(-cmd.Process.Pid, 0) == nil {
		t.Errorf("the README's examples left processes running")
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	if err != nil {
		logs, _ := os.ReadFile(r.logFile)
		t.Fatalf("the README's examples failed: %v\nscript:\n%s\noutput:\n%s\ndaemon log:\n%s", err, strings.Join(script, "\n"), out.String(), logs)
	}
	for _, w := range want {
		if !strings.Contains(out.String(), w) {
			t.Errorf("the output lacks %q:\n%s", w, out.String())
		}
	}
	expectEmpty(t, rdb, r.name)
	if n, err := rdb.Exists(context.Background(), queue.TopicsKey(r.name)).Result(); err != nil || n != 0 {
		t.Errorf("the topic registry %s is left (exists: %d, %v)", queue.TopicsKey(r.name), n, err)
	}
	expectNoQueue(t, r.name)
}

// deleteQueue deletes the queue if it is there.
func deleteQueue(name string) {
	conn, err := amqp091.Dial(e2etest.AMQPURL())
	if err != nil {
		return
	}
	defer conn.Close()
	if ch, err := conn.Channel(); err == nil {
		_, _ = ch.QueueDelete(name, false, false, false)
	}
}

// expectNoQueue fails the test if RabbitMQ has the queue.
func expectNoQueue(t *testing.T, name string) {
	t.Helper()
	conn, err := amqp091.Dial(e2etest.AMQPURL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	if _, err := ch.QueueDeclarePassive(name, true, false, false, false, nil); err == nil {
		t.Errorf("RabbitMQ still has the queue %s", name)
	}
}
