package envelope

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEnvelopeWithoutPropertiesIsByteIdenticalToBefore(t *testing.T) {
	b, err := Encode(Message{ID: "a", Body: []byte("x"), Headers: map[string]string{"k": "v"}, RoutingKey: "rk"})
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
	b, err := Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(b)
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
		if _, err := Decode([]byte(member)); !errors.Is(err, ErrInvalid) {
			t.Errorf("Decode(%s) = %v, want ErrInvalid", member, err)
		}
	}
	if _, err := Decode([]byte(`{"id":"a","properties":null}`)); err != nil {
		t.Errorf("null properties: %v", err)
	}
}
