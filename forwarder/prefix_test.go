package forwarder

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/delaybridge/delaybridge/queue"
)

func TestNewRefusesTopicsWhoseKeyPrefixIsNotTheForwarders(t *testing.T) {
	t.Parallel()
	q := queue.New(nil)
	opt := func(prefix string, topics ...queue.Topic) Options {
		o := Options{Queue: q, KeyPrefix: prefix, Metrics: NewMetrics(prometheus.NewRegistry())}
		for _, tp := range topics {
			o.Topics = append(o.Topics, Topic{tp, newRecordSink()})
		}
		return o
	}
	orders := queue.Topic{Name: "orders", Prefix: "app"}
	if _, err := New(opt("other", orders)); err == nil {
		t.Error("New accepted topic prefix app under forwarder prefix other")
	}
	if _, err := New(opt("", orders, queue.Topic{Name: "plain"})); err == nil {
		t.Error("New accepted topics with prefixes app and dq")
	}
	f, err := New(opt("", orders))
	if err != nil {
		t.Fatalf("New without a prefix: %v", err)
	}
	if f.opt.KeyPrefix != "app" {
		t.Errorf("New without a prefix took %q, want the topics' app", f.opt.KeyPrefix)
	}
}
