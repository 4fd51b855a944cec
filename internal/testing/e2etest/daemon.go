package e2etest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// StartTimeout is how long Start waits for the daemon's HTTP listener: a
// race-enabled binary on a loaded machine takes a while.
const StartTimeout = 60 * time.Second

// Daemon is one running `delaybridge run` process.
type Daemon struct {
	tb   testing.TB // nil when Launched by a program
	cmd  *exec.Cmd
	addr string

	exited chan struct{} // closed once the process ended and its log was read
	err    error         // Wait's result, set before exited closes

	mu  sync.Mutex
	log bytes.Buffer
}

// CleanEnv is the test's own environment without any DELAYBRIDGE_ variable:
// only what a test sets reaches the daemon.
func CleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DELAYBRIDGE_") {
			out = append(out, kv)
		}
	}
	return out
}

// Env is the environment of a daemon: CleanEnv plus quiet defaults (HTTP on
// a free loopback port, JSON logs at info), plus vars.
func Env(vars map[string]string) []string {
	out := append(CleanEnv(),
		"DELAYBRIDGE_HTTP_ADDR=127.0.0.1:0",
		"DELAYBRIDGE_LOG_LEVEL=info",
		"DELAYBRIDGE_LOG_FORMAT=json",
	)
	keys := make([]string, 0, len(vars))
	for k := range vars {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, k+"="+vars[k])
	}
	return out
}

// Start runs `binary run` with Env(vars) and waits until it serves HTTP. At
// cleanup it kills the process if it still runs and fails the test when the
// log shows a data race or a panic; when the test failed it logs the tail of
// the daemon's log.
func Start(tb testing.TB, binary string, vars map[string]string) *Daemon {
	tb.Helper()
	d, err := Launch(binary, vars)
	if d != nil {
		d.tb = tb
		tb.Cleanup(d.cleanup)
	}
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

// Launch is Start for a program (the benchmark): it runs `binary run` with
// Env(vars) and waits until it serves HTTP; the caller stops it. When the
// daemon started but does not serve, it is returned, killed, with the error.
func Launch(binary string, vars map[string]string) (*Daemon, error) {
	cmd := exec.Command(binary, "run")
	cmd.Env = Env(vars)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, fmt.Errorf("daemon stderr: %w", err)
	}
	d := &Daemon{cmd: cmd, exited: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start daemon: %w", err)
	}
	listening := make(chan string, 1)
	go func() {
		d.read(stderr, listening)
		d.err = cmd.Wait()
		close(d.exited)
	}()
	select {
	case d.addr = <-listening:
		return d, nil
	case <-d.exited:
		return d, fmt.Errorf("daemon exited (status: %v) before serving HTTP\n%s", d.err, d.Tail(4000))
	case <-time.After(StartTimeout):
		d.Kill()
		return d, fmt.Errorf("daemon did not serve HTTP within %s\n%s", StartTimeout, d.Tail(4000))
	}
}

// read copies the daemon's log and announces its HTTP address.
func (d *Daemon) read(r io.Reader, listening chan<- string) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Bytes()
		d.mu.Lock()
		d.log.Write(line)
		d.log.WriteByte('\n')
		d.mu.Unlock()
		var rec struct {
			Msg  string `json:"msg"`
			Addr string `json:"addr"`
		}
		if json.Unmarshal(line, &rec) == nil && rec.Msg == "http listening" {
			select {
			case listening <- rec.Addr:
			default:
			}
		}
	}
	_, _ = io.Copy(io.Discard, r) // a line over the limit: keep the pipe drained
}

// Addr is the host:port of the daemon's HTTP listener.
func (d *Daemon) Addr() string { return d.addr }

// PID is the daemon's process id.
func (d *Daemon) PID() int { return d.cmd.Process.Pid }

// Log is everything the daemon wrote to stderr so far.
func (d *Daemon) Log() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.log.String()
}

// Tail is the last n bytes of the log.
func (d *Daemon) Tail(n int) string {
	s := d.Log()
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return s
}

// Records are the daemon's JSON log lines whose msg is msg, oldest first,
// for the test to decode the attributes it looks at.
func (d *Daemon) Records(msg string) [][]byte {
	var out [][]byte
	for line := range strings.Lines(d.Log()) {
		if !strings.Contains(line, msg) {
			continue
		}
		var rec struct {
			Msg string `json:"msg"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == msg {
			out = append(out, []byte(line))
		}
	}
	return out
}

// Signal sends sig to the process: SIGSTOP freezes it as a stalled pod
// would be, SIGCONT lets it go on.
func (d *Daemon) Signal(sig os.Signal) error { return d.cmd.Process.Signal(sig) }

// Kill sends SIGKILL and waits for the process to end.
func (d *Daemon) Kill() {
	select {
	case <-d.exited:
		return
	default:
	}
	_ = d.cmd.Process.Signal(syscall.SIGKILL)
	<-d.exited
}

// Stop sends SIGTERM and waits up to within for the exit; it returns the
// process's exit error (nil for exit code 0). A daemon still running after
// within is killed and Stop reports it.
func (d *Daemon) Stop(within time.Duration) error {
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
		return d.err
	case <-time.After(within):
		d.Kill()
		return fmt.Errorf("daemon did not exit within %s of SIGTERM", within)
	}
}

// Exited is closed once the process ended.
func (d *Daemon) Exited() <-chan struct{} { return d.exited }

func (d *Daemon) cleanup() {
	d.Kill()
	log := d.Log()
	for _, bad := range []string{"WARNING: DATA RACE", "panic: ", "fatal error: "} {
		if strings.Contains(log, bad) {
			i := strings.Index(log, bad)
			d.tb.Errorf("daemon (pid %d) log shows %q:\n%s", d.PID(), bad, log[i:min(len(log), i+8000)])
		}
	}
	if d.tb.Failed() {
		d.tb.Logf("daemon (pid %d) log, tail:\n%s", d.PID(), d.Tail(12000))
	}
}
