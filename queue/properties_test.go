package queue

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEnvelopeWithoutPropertiesIsByteIdenticalToBefore(t *testing.T) {
	b, err := EncodeEnvelope(Message{ID: "a", Body: []byte("x"), Headers: map[string]string{"k": "v"}, RoutingKey: "rk"})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"id":"a","body":"x","headers":{"k":"v"},"routing_key":"rk"}`; string(b) != want {
		t.Errorf("got %s, want %s", b, want)
	}
}

func TestEnvelopePropertiesRoundTrip(t *testing.T) {
	m := Message{ID: "a", Body: []byte("x"), Properties: Properties{
		ContentType: "application/json", ContentEncoding: "gzip", CorrelationID: "c1", ReplyTo: "r",
		Expiration: "60000", Timestamp: 1764000000, Type: "t", AppID: "app", Priority: 5,
	}}
	b, err := EncodeEnvelope(m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeEnvelope(b)
	if err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	if diff := cmp.Diff(m, got); diff != "" {
		t.Errorf("round trip of %s (-want +got):\n%s", b, diff)
	}
}

func TestEnvelopePropertiesRefuseUnknownAndBadFields(t *testing.T) {
	for _, member := range []string{
		`{"id":"a","properties":{"contenttype":"x"}}`,
		`{"id":"a","properties":{"priority":300}}`,
		`{"id":"a","properties":{"timestamp":-1}}`,
		`{"id":"a","properties":"x"}`,
		`{"id":"a","properties":{"type":"` + strings.Repeat("t", 256) + `"}}`,
	} {
		if _, err := DecodeEnvelope([]byte(member)); !errors.Is(err, ErrInvalidEnvelope) {
			t.Errorf("DecodeEnvelope(%s) = %v, want ErrInvalidEnvelope", member, err)
		}
	}
	if _, err := DecodeEnvelope([]byte(`{"id":"a","properties":null}`)); err != nil {
		t.Errorf("null properties: %v", err)
	}
}

func TestRawTopicRefusesProperties(t *testing.T) {
	tp := Topic{Name: "raw"}
	if _, err := tp.Encode(Message{Body: []byte("x"), Properties: Properties{Type: "t"}}); !errors.Is(err, ErrNotEnvelope) {
		t.Errorf("Encode = %v, want ErrNotEnvelope", err)
	}
}
