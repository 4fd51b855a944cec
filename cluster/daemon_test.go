package cluster

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// daemon is one running delaybridge process.
type daemon struct {
	t    *testing.T
	id   string
	cmd  *exec.Cmd
	done chan struct{} // closed once the process exited and its log is read
	err  error         // the exit, valid after done
	addr string        // HTTP address of /metrics
	log  *os.File

	mu      sync.Mutex
	changes []ownershipChange
	races   int // data races the race detector reported
}

// ownershipChange is one "ownership changed" log line of a daemon.
type ownershipChange struct {
	At       time.Time
	Replicas int
	Owned    int
	Gained   int
	Lost     int
}

// startDaemon runs the binary as replica id with the backend's Redis
// variables plus vars, and waits until it serves HTTP.
func startDaemon(t *testing.T, b *backend, id string, vars map[string]string) *daemon {
	t.Helper()
	cmd := exec.Command(binary, "run")
	// Only this test's DELAYBRIDGE_* variables reach the daemon.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DELAYBRIDGE_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env,
		"DELAYBRIDGE_AMQP_URL="+amqpURL(),
		"DELAYBRIDGE_HTTP_ADDR=127.0.0.1:0",
		"DELAYBRIDGE_LOG_LEVEL=info",
		"DELAYBRIDGE_REPLICA_ID="+id,
	)
	if os.Getenv("GORACE") == "" {
		cmd.Env = append(cmd.Env, "GORACE=atexit_sleep_ms=0") // exit at once, not a second later
	}
	for k, v := range b.vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	for k, v := range vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	logf, err := os.CreateTemp("", "delaybridge-cluster-*.log")
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	d := &daemon{t: t, id: id, cmd: cmd, done: make(chan struct{}), log: logf}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start daemon %s: %v", id, err)
	}
	addr := make(chan string, 1)
	go func() {
		d.readLog(stderr, addr)
		d.err = cmd.Wait()
		close(d.done)
	}()
	t.Cleanup(func() {
		d.kill()
		d.mu.Lock()
		if d.races > 0 {
			t.Errorf("daemon %s: the race detector reported %d data races (see its log)", id, d.races)
		}
		d.mu.Unlock()
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			if len(b) > 8000 {
				b = b[len(b)-8000:]
			}
			t.Logf("daemon %s log (tail):\n%s", id, b)
		}
		os.Remove(logf.Name())
	})
	select {
	case d.addr = <-addr:
	case <-d.done:
		t.Fatalf("daemon %s exited before serving: %v", id, d.err)
	case <-time.After(30 * time.Second):
		t.Fatalf("daemon %s did not start serving within 30 s", id)
	}
	return d
}

// readLog copies the daemon's log to its file and records what tests look
// at, until the process closes stderr.
func (d *daemon) readLog(r io.Reader, addr chan<- string) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(d.log, line)
		if strings.Contains(line, "WARNING: DATA RACE") {
			d.mu.Lock()
			d.races++
			d.mu.Unlock()
		}
		var rec struct {
			Time     time.Time `json:"time"`
			Msg      string    `json:"msg"`
			Addr     string    `json:"addr"`
			Replicas int       `json:"replicas"`
			Owned    int       `json:"owned"`
			Gained   int       `json:"gained"`
			Lost     int       `json:"lost"`
		}
		if json.Unmarshal([]byte(line), &rec) != nil {
			continue
		}
		switch rec.Msg {
		case "http listening":
			select {
			case addr <- rec.Addr:
			default:
			}
		case "ownership changed":
			d.mu.Lock()
			d.changes = append(d.changes, ownershipChange{rec.Time, rec.Replicas, rec.Owned, rec.Gained, rec.Lost})
			d.mu.Unlock()
		}
	}
}

// changesSince are the ownership changes logged at or after from.
func (d *daemon) changesSince(from time.Time) []ownershipChange {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []ownershipChange
	for _, c := range d.changes {
		if !c.At.Before(from) {
			out = append(out, c)
		}
	}
	return out
}

// exited reports whether the process is gone.
func (d *daemon) exited() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM, as Kubernetes does, and waits for the exit.
func (d *daemon) stop(within time.Duration) error {
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
		return d.err
	case <-time.After(within):
		d.t.Errorf("daemon %s did not exit within %s of SIGTERM", d.id, within)
		d.kill()
		return d.err
	}
}

// kill sends SIGKILL and waits for the exit.
func (d *daemon) kill() {
	if d.exited() {
		return
	}
	d.cmd.Process.Kill()
	select {
	case <-d.done:
	case <-time.After(10 * time.Second):
		d.t.Errorf("daemon %s still running 10 s after SIGKILL", d.id)
	}
}

// metric reads one sample of /metrics: the line of name whose labels contain
// label (e.g. `topic="orders"`; "" for none). A metric not exposed yet is 0.
func (d *daemon) metric(name, label string) (float64, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + d.addr + "/metrics")
	if err != nil {
		return 0, fmt.Errorf("scrape %s: %w", d.id, err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, name)
		if !ok || (rest[0] != ' ' && rest[0] != '{') || !strings.Contains(rest, label) {
			continue
		}
		i := strings.LastIndexByte(rest, ' ')
		return strconv.ParseFloat(rest[i+1:], 64)
	}
	return 0, sc.Err()
}

// owned is the delaybridge_owned_slots gauge of topic; -1 when it cannot be
// read (the daemon is busy or gone).
func (d *daemon) owned(topic string) int {
	v, err := d.metric("delaybridge_owned_slots", `topic="`+topic+`"`)
	if err != nil {
		return -1
	}
	return int(v)
}

// counter is a counter of topic; the test fails when it cannot be read.
func (d *daemon) counter(name, topic string) float64 {
	d.t.Helper()
	v, err := d.metric(name, `topic="`+topic+`"`)
	if err != nil {
		d.t.Fatalf("read %s of %s: %v", name, d.id, err)
	}
	return v
}
