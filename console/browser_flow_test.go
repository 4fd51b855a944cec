package console_test

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/delaybridge/delaybridge/console"
	"github.com/delaybridge/delaybridge/internal/testing/redistest"
	"github.com/delaybridge/delaybridge/queue"
)

func slogDiscard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// TestBrowserPauseResumeAndRequeue drives the console in chromium against
// a real Redis, an in-process forwarder and RabbitMQ: a message RabbitMQ
// refuses (its queue does not exist yet) is dead-lettered; the operator sees
// scheduled messages, opens one, pauses the topic (the forwarder stops
// claiming), resumes it (the message arrives) and, with the queue created,
// requeues the dead message (it arrives too). Any JavaScript error fails the
// test.
func TestBrowserPauseResumeAndRequeue(t *testing.T) {
	needChromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	f := newFixture(t, "browser-token")
	// orders goes to the consumer's queue through the default exchange.
	qname := "console-test-" + redistest.Suffix()
	l := queue.Layout{Version: queue.LayoutVersion, Name: "orders", Slots: 2, Format: queue.FormatRaw, Sink: "amqp", RoutingKey: qname}
	srv, err := console.New(console.Options{Queue: f.q, Prefix: f.prefix, Token: f.token, Configured: []queue.Layout{l}, Refresh: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	web := httptest.NewServer(srv)
	defer web.Close()

	// The queue does not exist yet: RabbitMQ returns the message unroutable,
	// and with MaxAttempts 1 that refusal dead-letters it.
	startForwarder(t, f.q, f.prefix, f.orders, qname)
	poison := f.schedule(f.orders, `{"order":7,"note":"<script>alert(1)</script>"}`, 0)
	var dead queue.Entry
	waitFor(t, 15*time.Second, "RabbitMQ's refusal to dead-letter the message", func() bool {
		dead, err = f.q.Inspect(ctx, f.orders, []byte(poison.Member))
		return err == nil && dead.State == "dead"
	})
	if !contains(dead.LastError, "NO_ROUTE") {
		t.Fatalf("dead for %q, want RabbitMQ's NO_ROUTE", dead.LastError)
	}
	cons := newConsumer(t, qname)
	f.schedule(f.orders, "later-1", time.Hour)
	f.schedule(f.orders, `{"order":42,"event":"payment-timeout"}`, 2*time.Hour)

	b, jsErrors := browser(t, ctx)
	run := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, cancel := context.WithTimeout(b, 15*time.Second)
		defer cancel()
		if err := chromedp.Do(sctx, actions...); err != nil {
			loc, _ := chromedp.Run(b, chromedp.Location())
			html, _ := chromedp.Run(b, chromedp.OuterHTML(chromedp.CSS("main")))
			t.Fatalf("%s: %v (at %s)\n%s", what, err, loc, html)
		}
	}
	run("log in", chromedp.Navigate(web.URL+"/login"), chromedp.SendKeys(chromedp.CSS("#token"), f.token),
		chromedp.Click(chromedp.CSS("#login")), chromedp.WaitVisible(chromedp.CSS(`#topics tr[data-topic="orders"]`)))

	run("topic page", chromedp.Navigate(web.URL+"/topics/orders"), chromedp.WaitVisible(chromedp.CSS("#messages")))
	body, _ := text(b, "#messages")
	if !contains(body, "later-1") || !contains(body, "payment-timeout") {
		t.Fatalf("topic page lacks the scheduled messages:\n%s", body)
	}
	run("open a message", chromedp.Click(chromedp.CSS(`#messages a.msg`)), chromedp.WaitVisible(chromedp.CSS("#body")),
		chromedp.WaitVisible(chromedp.CSS(".local")))
	screenshot(t, b, "message.png")
	if local, _ := text(b, ".local"); !contains(local, "(local)") {
		t.Errorf("the local due time is not filled in by the script: %q", local)
	}

	run("topic page", chromedp.Navigate(web.URL+"/topics/orders"), chromedp.WaitVisible(chromedp.CSS("#pause")))
	if res, err := act(b, "#pause"); err != nil || !contains(res, "Paused orders") {
		t.Fatalf("pause: %q, %v", res, err)
	}
	due := f.schedule(f.orders, "due-while-paused", 0)
	time.Sleep(time.Second)
	if cons.has("due-while-paused") {
		t.Fatal("a message of a paused topic was delivered")
	}
	if c, err := f.q.Claim(ctx, f.orders, due.Slot, 10, time.Minute); err != nil || !c.Paused || len(c.Messages) != 0 {
		t.Fatalf("claim while paused = %+v, %v", c, err)
	}
	run("back", chromedp.Click(chromedp.CSS("#back")), chromedp.WaitVisible(chromedp.CSS("#resume")))
	if res, err := act(b, "#resume"); err != nil || !contains(res, "Resumed orders") {
		t.Fatalf("resume: %q, %v", res, err)
	}
	waitFor(t, 10*time.Second, "the message due while paused to arrive", func() bool { return cons.has("due-while-paused") })

	run("dead message", chromedp.Navigate(web.URL+"/topics/orders?state=dead"), chromedp.WaitVisible(chromedp.CSS("#messages a.msg")),
		chromedp.Click(chromedp.CSS("#messages a.msg")), chromedp.WaitVisible(chromedp.CSS("#requeue")))
	if pre, _ := text(b, "#body"); !contains(pre, "<script>alert(1)</script>") {
		t.Errorf("the body is not shown as text: %q", pre)
	}
	if res, err := act(b, "#requeue"); err != nil || !contains(res, "Requeued 1") {
		t.Fatalf("requeue: %q, %v", res, err)
	}
	waitFor(t, 10*time.Second, "the requeued message to arrive", func() bool { return cons.has(poison.Member) })

	run("overview", chromedp.Navigate(web.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#topics")))
	before, _ := text(b, "#live p.muted")
	run("overview refresh", chromedp.Sleep(1500*time.Millisecond), chromedp.WaitVisible(chromedp.CSS(`#topics tr[data-topic="orders"]`)))
	if after, _ := text(b, "#live p.muted"); after == before {
		t.Errorf("the overview did not refresh itself: still %q", after)
	}
	if reps, _ := text(b, "#replicas"); !contains(reps, "browser-test") {
		t.Errorf("the overview does not list the forwarder's replica:\n%s", reps)
	}
	overview := screenshot(t, b, "overview.png")
	if dst := os.Getenv("DELAYBRIDGE_TEST_CONSOLE_PNG"); dst != "" { // docs/console.png for the README
		copyFile(t, overview, dst)
	}
	for _, e := range jsErrors() {
		t.Errorf("JavaScript error: %s", e)
	}
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err == nil {
		err = os.WriteFile(dst, b, 0o644)
	}
	if err != nil {
		t.Fatalf("copy screenshot to %s: %v", dst, err)
	}
}
