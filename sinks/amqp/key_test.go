package amqp

import (
	"testing"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/delaybridge/delaybridge/sinks"
)

// TestPublishingCarriesTheKeyOnlyWhenSet: a message's fair-share key is
// the x-delaybridge-key header; a message without one has no such header.
func TestPublishingCarriesTheKeyOnlyWhenSet(t *testing.T) {
	p := publishing(sinks.Message{ID: "m", Key: "tenant-1"}, time.Now(), amqp091.Table{})
	if p.Headers[sinks.HeaderKey] != "tenant-1" {
		t.Errorf("headers %v, want %s=tenant-1", p.Headers, sinks.HeaderKey)
	}
	p = publishing(sinks.Message{ID: "m"}, time.Now(), amqp091.Table{})
	if _, ok := p.Headers[sinks.HeaderKey]; ok {
		t.Errorf("a message without a key has headers %v", p.Headers)
	}
}
