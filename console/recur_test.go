package console_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/delaybridge/delaybridge/queue"
)

func TestTopicPageListsRecurrencesAndRemoveAsksFirst(t *testing.T) {
	f := newFixture(t, "s3cret-token")
	r := queue.Recurrence{ID: "daily-digest", Spec: "0 9 * * *", Zone: "Europe/Berlin", Message: queue.Message{Body: []byte("digest")}}
	if _, err := f.q.SetRecurrence(context.Background(), f.orders, r); err != nil {
		t.Fatal(err)
	}
	res, body := f.do("GET", "/topics/orders", nil, nil)
	wantStatus(t, res, body, http.StatusOK)
	wantContains(t, body, `id="recurrences"`, "daily-digest", "0 9 * * *", "Europe/Berlin", "digest")

	form := url.Values{"rid": {"daily-digest"}}
	res, body = f.do("POST", "/topics/orders/recur-rm", form, f.bearer())
	wantStatus(t, res, body, http.StatusOK)
	wantContains(t, body, "Confirm: recur-rm", `name="rid" value="daily-digest"`)
	if rs, _ := f.q.Recurrences(context.Background(), f.orders); len(rs) != 1 {
		t.Fatal("the confirmation step removed the recurrence")
	}
	form.Set("confirm", "yes")
	res, body = f.do("POST", "/topics/orders/recur-rm", form, f.bearer())
	wantStatus(t, res, body, http.StatusOK)
	wantContains(t, body, "Removed the recurring message daily-digest of orders")
	if rs, _ := f.q.Recurrences(context.Background(), f.orders); len(rs) != 0 {
		t.Fatalf("left after remove: %v", rs)
	}
	res, body = f.do("POST", "/topics/orders/recur-rm", form, f.bearer())
	wantStatus(t, res, body, http.StatusNotFound)
	res, body = f.do("POST", "/topics/orders/recur-rm", url.Values{"confirm": {"yes"}}, nil)
	if res.StatusCode == http.StatusOK {
		t.Errorf("remove without a token answered 200: %s", body)
	}
}
