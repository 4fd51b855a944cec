package config

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/delaybridge/delaybridge/queue"
)

// TestMaxMessageSize: MAX_MESSAGE_SIZE is 1 MiB by default and reaches every
// topic's queue.Topic; a topic's own overrides it, for listed topics and for
// registered ones that are not listed (MessageSize.Apply); Redacted shows
// them; a bad value is refused naming its variable.
func TestMaxMessageSize(t *testing.T) {
	setEnv(t, map[string]string{"TOPICS": "orders,plain"})
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Topics[0].Queue("dq").MaxMessageSize; got != queue.DefaultMaxMessageSize {
		t.Errorf("default limit = %d; want 1048576", got)
	}

	setEnv(t, map[string]string{"TOPICS": "orders,plain", "MAX_MESSAGE_SIZE": "2000",
		"TOPIC_ORDERS_MAX_MESSAGE_SIZE": "10", "TOPIC_AUDIT_LOG_MAX_MESSAGE_SIZE": "30"})
	c, err = Load()
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Topics[0].Queue("dq").MaxMessageSize; got != 10 {
		t.Errorf("orders' limit = %d; want its own 10", got)
	}
	if got := c.Topics[1].Queue("dq").MaxMessageSize; got != 2000 {
		t.Errorf("plain's limit = %d; want the global 2000", got)
	}
	if got := c.MessageSize.Apply(queue.Topic{Name: "audit.log"}).MaxMessageSize; got != 30 {
		t.Errorf("unlisted audit.log's limit = %d; want its own 30", got)
	}
	if got := c.MessageSize.Of("other"); got != 2000 {
		t.Errorf("unlisted other's limit = %d; want 2000", got)
	}
	r := c.Redacted()
	if r[Prefix+"_MAX_MESSAGE_SIZE"] != "2000" || r[Prefix+"_TOPIC_ORDERS_MAX_MESSAGE_SIZE"] != "10" || r[Prefix+"_TOPIC_AUDIT_LOG_MAX_MESSAGE_SIZE"] != "30" {
		t.Errorf("Redacted shows %q, %q, %q", r[Prefix+"_MAX_MESSAGE_SIZE"], r[Prefix+"_TOPIC_ORDERS_MAX_MESSAGE_SIZE"], r[Prefix+"_TOPIC_AUDIT_LOG_MAX_MESSAGE_SIZE"])
	}
	if u := c.Unused([]string{Prefix + "_TOPIC_AUDIT_LOG_MAX_MESSAGE_SIZE=30"}); len(u) != 0 {
		t.Errorf("Unused = %v; the variable is read", u)
	}

	for _, tt := range []struct{ name, v, value string }{
		{"global zero", "MAX_MESSAGE_SIZE", "0"},
		{"global not a number", "MAX_MESSAGE_SIZE", "1MB"},
		{"global over 512 MiB", "MAX_MESSAGE_SIZE", "536870913"},
		{"topic negative", "TOPIC_ORDERS_MAX_MESSAGE_SIZE", "-1"},
		{"unlisted topic", "TOPIC_AUDIT_MAX_MESSAGE_SIZE", "x"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			setEnv(t, map[string]string{"TOPICS": "orders", tt.v: tt.value})
			_, err := Load()
			if err == nil {
				t.Fatal("Load accepted it")
			}
			if diff := cmp.Diff([]string{Prefix + "_" + tt.v}, varsNamed(t, err)); diff != "" {
				t.Errorf("variables named (-want +got):\n%s", diff)
			}
		})
	}
}
