package redis

import (
	"testing"

	"github.com/delaybridge/delaybridge/sinks"
)

// TestEntryCarriesTheKeyOnlyWhenSet: a message's fair-share key is the
// entry's FieldKey; a message without one has no such field.
func TestEntryCarriesTheKeyOnlyWhenSet(t *testing.T) {
	s := &Sink{}
	has := func(m sinks.Message) (bool, any) {
		v := s.xadd(&m).Values.([]any)
		for i := 0; i+1 < len(v); i += 2 {
			if v[i] == FieldKey {
				return true, v[i+1]
			}
		}
		return false, nil
	}
	if ok, v := has(sinks.Message{ID: "m", Key: "tenant-1"}); !ok || v != "tenant-1" {
		t.Errorf("key field %v %v, want tenant-1", ok, v)
	}
	if ok, _ := has(sinks.Message{ID: "m"}); ok {
		t.Error("a message without a key has a key field")
	}
}
