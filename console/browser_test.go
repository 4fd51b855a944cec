package console_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/prometheus/client_golang/prometheus"
	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/delaybridge/delaybridge/forwarder"
	"github.com/delaybridge/delaybridge/queue"
	"github.com/delaybridge/delaybridge/sinks/amqp"
)

// chromiumPath is Debian's chromium (scripts/chromium.sh installs it).
const chromiumPath = "/usr/bin/chromium"

// needChromium fails the test in CI when chromium is missing, and skips it
// with a clear message elsewhere.
func needChromium(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath(chromiumPath); err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is missing: run scripts/chromium.sh (make test does)", chromiumPath)
	}
	t.Skipf("%s is missing: run scripts/chromium.sh to run the console's browser test", chromiumPath)
}

func amqpURL() string {
	if u := os.Getenv("DELAYBRIDGE_TEST_AMQP_URL"); u != "" {
		return u
	}
	return "amqp://guest:guest@127.0.0.1:5672/"
}

// consumer declares a queue of its own on RabbitMQ and collects the bodies
// that arrive in it.
type consumer struct {
	name string
	mu   sync.Mutex
	got  []string
}

func newConsumer(t *testing.T, name string) *consumer {
	t.Helper()
	conn, err := amqp091.Dial(amqpURL())
	if err != nil {
		t.Fatalf("RabbitMQ at %s is required: %v", amqpURL(), err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	q, err := ch.QueueDeclare(name, false, true, true, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	deliveries, err := ch.Consume(q.Name, "", true, true, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &consumer{name: q.Name}
	go func() {
		for d := range deliveries { // ends when the connection closes
			c.mu.Lock()
			c.got = append(c.got, string(d.Body))
			c.mu.Unlock()
		}
	}()
	return c
}

func (c *consumer) has(body string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, g := range c.got {
		if g == body {
			return true
		}
	}
	return false
}

// waitFor polls cond until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(d); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
	}
}

// startForwarder runs a forwarder of topic into the consumer's queue until
// the test ends.
func startForwarder(t *testing.T, q *queue.Queue, prefix string, topic queue.Topic, queueName string) {
	t.Helper()
	sink, err := amqp.New(amqp.Config{URL: amqpURL(), RoutingKey: queueName}, slogDiscard())
	if err != nil {
		t.Fatal(err)
	}
	fw, err := forwarder.New(forwarder.Options{Queue: q, KeyPrefix: prefix, ReplicaID: "browser-test",
		Topics: []forwarder.Topic{{Topic: topic, Sink: sink}}, MaxAttempts: 1,
		PollInterval: 100 * time.Millisecond, HeartbeatInterval: 200 * time.Millisecond, Log: slogDiscard(),
		Metrics: forwarder.NewMetrics(prometheus.NewRegistry())})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- fw.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("forwarder: %v", err)
		}
		_ = sink.Close()
	})
}

// browser starts a headless chromium and returns its context and a func
// that lists the JavaScript errors (console.error calls, uncaught
// exceptions, browser log errors such as CSP violations) seen so far.
func browser(t *testing.T, parent context.Context) (context.Context, func() []string) {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{chromedp.ExecPath(chromiumPath),
		chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun, chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900)}
	actx, cancelAlloc := chromedp.NewExecAllocator(parent, opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		cancelCtx()
		cancelAlloc()
		t.Fatalf("start chromium: %v", err)
	}
	var mu sync.Mutex
	var errs []string
	messages := chromedp.Console(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				mu.Lock()
				errs = append(errs, m.String()+" at "+m.URL)
				mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { cancelCtx(); cancelAlloc(); <-done })
	return ctx, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), errs...) }
}

func screenshot(t *testing.T, ctx context.Context, name string) string {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // 100: PNG
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s", path)
	return path
}

func text(ctx context.Context, sel string) (string, error) {
	return chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
}

// act clicks an action button, confirms, and returns the result text.
func act(ctx context.Context, button string) (string, error) {
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(button)), chromedp.WaitVisible(chromedp.CSS("#confirm")),
		chromedp.Click(chromedp.CSS("#confirm")), chromedp.WaitVisible(chromedp.CSS("#result"))); err != nil {
		return "", fmt.Errorf("act %s: %w", button, err)
	}
	return text(ctx, "#result")
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
