package kafka

import (
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/sinks"
)

// TestRecordCarriesTheKeyOnlyWhenSet: a message's fair-share key is the
// x-delaybridge-key header, and a header of the envelope's cannot forge it.
func TestRecordCarriesTheKeyOnlyWhenSet(t *testing.T) {
	s := &Sink{}
	count := func(m sinks.Message) (n int, v string) {
		for _, h := range s.record(&m, time.Now()).Headers {
			if h.Key == sinks.HeaderKey {
				n, v = n+1, string(h.Value)
			}
		}
		return n, v
	}
	if n, v := count(sinks.Message{ID: "m", Key: "tenant-1", Headers: map[string]string{sinks.HeaderKey: "forged"}}); n != 1 || v != "tenant-1" {
		t.Errorf("%d key headers, value %q; want one, tenant-1", n, v)
	}
	if n, _ := count(sinks.Message{ID: "m"}); n != 0 {
		t.Errorf("a message without a key has %d key headers", n)
	}
}
