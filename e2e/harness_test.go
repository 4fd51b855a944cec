// Package e2e runs the built delaybridge binary as a separate process against
// the real Redis and RabbitMQ and checks the guarantees of DESIGN.md by
// counting numbered messages: none lost, none early, duplicates counted.
package e2e

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"
)

// binary is the daemon built once for every test.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "delaybridge-e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "delaybridge")
	build := exec.Command("go", "build", "-race", "-o", binary, "../cmd/delaybridge")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build delaybridge:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func redisURL() string { return env("DELAYBRIDGE_TEST_REDIS_URL", "redis://127.0.0.1:6379/0") }
func amqpURL() string  { return env("DELAYBRIDGE_TEST_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/") }

// uniq is a unique name for this test's keys, exchanges and queues.
func uniq(t *testing.T) string {
	b := make([]byte, 4)
	rand.Read(b)
	name := strings.NewReplacer("/", "-", " ", "-").Replace(t.Name())
	return "e2e-" + name + "-" + hex.EncodeToString(b)
}

func connectRedis(t *testing.T, prefix string) *redis.Client {
	t.Helper()
	opt, err := redis.ParseURL(redisURL())
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("redis at %s is required: %v", redisURL(), err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		iter := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			rdb.Del(ctx, iter.Val())
		}
		rdb.Close()
	})
	return rdb
}

// leftKeys lists the keys under prefix.
func leftKeys(t *testing.T, rdb *redis.Client, prefix string) []string {
	t.Helper()
	keys, err := rdb.Keys(context.Background(), prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// daemon is one running delaybridge process.
type daemon struct {
	t    *testing.T
	cmd  *exec.Cmd
	done chan error
	addr chan string
	log  *os.File
}

// startDaemon runs the binary with the given variables (plus Redis/AMQP
// URLs) and waits until it serves HTTP.
func startDaemon(t *testing.T, vars map[string]string) *daemon {
	t.Helper()
	cmd := exec.Command(binary, "run")
	cmd.Env = append(os.Environ(),
		"DELAYBRIDGE_REDIS_URL="+redisURL(),
		"DELAYBRIDGE_AMQP_URL="+amqpURL(),
		"DELAYBRIDGE_HTTP_ADDR=127.0.0.1:0",
		"DELAYBRIDGE_LOG_LEVEL=info",
	)
	for k, v := range vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	logf, err := os.CreateTemp("", "delaybridge-e2e-*.log")
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	d := &daemon{t: t, cmd: cmd, done: make(chan error, 1), addr: make(chan string, 1), log: logf}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start daemon: %v", err)
	}
	var copied sync.WaitGroup
	copied.Add(1)
	go func() {
		defer copied.Done()
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(logf, line)
			var rec struct {
				Msg  string `json:"msg"`
				Addr string `json:"addr"`
			}
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "http listening" {
				select {
				case d.addr <- rec.Addr:
				default:
				}
			}
		}
	}()
	go func() {
		copied.Wait()
		d.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		d.kill()
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			if len(b) > 20000 {
				b = b[len(b)-20000:]
			}
			t.Logf("daemon log (tail):\n%s", b)
		}
		os.Remove(logf.Name())
	})
	select {
	case <-d.addr:
	case err := <-d.done:
		t.Fatalf("daemon exited before serving: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("daemon did not start serving within 30 s")
	}
	return d
}

// stop sends SIGTERM and waits for the exit.
func (d *daemon) stop(within time.Duration) error {
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-d.done:
		return err
	case <-time.After(within):
		d.t.Errorf("daemon did not exit within %s of SIGTERM", within)
		d.kill()
		return <-d.done
	}
}

// kill sends SIGKILL and waits for the exit.
func (d *daemon) kill() {
	if d.cmd.ProcessState != nil {
		return
	}
	d.cmd.Process.Kill()
	select {
	case <-d.done:
	case <-time.After(10 * time.Second):
	}
}

// rabbit declares an exchange and a queue bound to it, and consumes.
type rabbit struct {
	conn     *amqp.Connection
	Exchange string
	Queue    string
	mu       sync.Mutex
	got      []delivery
}

// delivery is one message the consumer received.
type delivery struct {
	body    string
	id      string
	due     int64
	attempt int64
	at      time.Time
}

func newRabbit(t *testing.T, name string) *rabbit {
	t.Helper()
	conn, err := amqp.Dial(amqpURL())
	if err != nil {
		t.Fatalf("rabbitmq at %s is required: %v", amqpURL(), err)
	}
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	r := &rabbit{conn: conn, Exchange: name, Queue: name}
	if err := ch.ExchangeDeclare(name, "direct", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare(name, true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := ch.QueueBind(name, name, name, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := ch.Qos(2000, 0, false); err != nil {
		t.Fatal(err)
	}
	msgs, err := ch.Consume(name, "", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for m := range msgs {
			d := delivery{body: string(m.Body), id: m.MessageId, at: time.Now()}
			d.due, _ = m.Headers["x-delaybridge-due"].(int64)
			switch a := m.Headers["x-delaybridge-attempt"].(type) {
			case int64:
				d.attempt = a
			case int32:
				d.attempt = int64(a)
			}
			r.mu.Lock()
			r.got = append(r.got, d)
			r.mu.Unlock()
			m.Ack(false)
		}
	}()
	t.Cleanup(func() {
		ch2, err := conn.Channel()
		if err == nil {
			ch2.QueueDelete(name, false, false, false)
			ch2.ExchangeDelete(name, false, false)
		}
		conn.Close()
	})
	return r
}

func (r *rabbit) deliveries() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.got...)
}

func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", within, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
