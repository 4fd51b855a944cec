package queue

import (
	"errors"
	"testing"
)

func TestRawTopicRefusesProperties(t *testing.T) {
	tp := Topic{Name: "raw"}
	if _, err := tp.Encode(Message{Body: []byte("x"), Properties: Properties{Type: "t"}}); !errors.Is(err, ErrNotEnvelope) {
		t.Errorf("Encode = %v, want ErrNotEnvelope", err)
	}
}
