package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/queue"
)

// TestFairTopicPageListsKeysAndPausesOne: a fair topic's page lists the keys
// with the most messages scheduled; its Pause key button (confirmed) holds
// that key only, the page shows it paused, and Resume key lets it go. On a
// topic without fair share the action is a bad request.
func TestFairTopicPageListsKeysAndPausesOne(t *testing.T) {
	f := newFixture(t, "s3cret-token")
	ctx := context.Background()
	l := queue.Layout{Version: queue.LayoutVersion, Name: "tenants", Slots: 1, Format: queue.FormatEnvelope, Fair: true, Sink: "kafka", KafkaTopic: "tenants"}
	if _, err := f.q.Register(ctx, f.prefix, "test-replica-fair", []queue.Layout{l}); err != nil {
		t.Fatal(err)
	}
	tp := l.Topic(f.prefix)
	var items []queue.Item
	for i := range 3 {
		items = append(items, queue.Item{Message: queue.Message{ID: fmt.Sprintf("acme-%d", i), Key: "acme", Body: []byte("x")}, When: queue.In(-time.Second)})
	}
	items = append(items, queue.Item{Message: queue.Message{ID: "globex-0", Key: "globex", Body: []byte("x")}, When: queue.In(-time.Second)})
	if _, err := f.q.ScheduleBatch(ctx, tp, items); err != nil {
		t.Fatal(err)
	}
	cookie, _ := f.login()
	session := map[string]string{"Cookie": cookie}
	res, body := f.do("GET", "/topics/tenants", nil, session)
	wantStatus(t, res, body, http.StatusOK)
	wantContains(t, body, `id="keys"`, "<code>acme</code>", "<code>globex</code>", "Pause key")

	pause := url.Values{"key": {"acme"}}
	res, body = f.do("POST", "/topics/tenants/pause", pause, f.bearer())
	wantStatus(t, res, body, http.StatusOK)
	wantContains(t, body, "Confirm: pause", `name="key" value="acme"`)
	pause.Set("confirm", "yes")
	res, body = f.do("POST", "/topics/tenants/pause", pause, f.bearer())
	wantStatus(t, res, body, http.StatusOK)
	wantContains(t, body, `Paused key &#34;acme&#34; of tenants.`)
	c, err := f.q.Claim(ctx, tp, 0, 10, time.Minute)
	if err != nil || len(c.Messages) != 1 {
		t.Fatalf("claim with acme paused: %d messages, %v; want globex's one", len(c.Messages), err)
	}
	_, body = f.do("GET", "/topics/tenants", nil, session)
	wantContains(t, body, "Resume key", "since <time")

	res, body = f.do("POST", "/topics/tenants/resume", url.Values{"key": {"acme"}, "confirm": {"yes"}}, f.bearer())
	wantStatus(t, res, body, http.StatusOK)
	wantContains(t, body, `Resumed key &#34;acme&#34; of tenants.`)
	if c, err := f.q.Claim(ctx, tp, 0, 10, time.Minute); err != nil || len(c.Messages) != 3 {
		t.Fatalf("claim after resume: %d messages, %v; want acme's 3", len(c.Messages), err)
	}
	res, body = f.do("POST", "/topics/orders/pause", url.Values{"key": {"acme"}, "confirm": {"yes"}}, f.bearer())
	wantStatus(t, res, body, http.StatusBadRequest)
}
