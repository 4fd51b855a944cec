package queue

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTopicDecodeOfInvalidMemberOnEnvelopeTopicIsAnError(t *testing.T) {
	t.Parallel()
	env := Topic{Name: "orders", Format: FormatEnvelope}
	if _, err := env.Decode(`{"order":42}`); !errors.Is(err, ErrInvalidEnvelope) || !strings.Contains(err.Error(), "orders") {
		t.Errorf("Decode = %v, want ErrInvalidEnvelope naming the topic", err)
	}
	raw := Topic{Name: "orders"}
	m, err := raw.Decode(`{"order":42}`)
	if err != nil || m.ID != MessageID([]byte(`{"order":42}`)) || string(m.Body) != `{"order":42}` {
		t.Errorf("raw Decode = %+v, %v", m, err)
	}
}

func TestEncodeOnRawTopicCarriesOnlyTheBody(t *testing.T) {
	t.Parallel()
	raw := Topic{Name: "orders"}
	if b, err := raw.Encode(Message{Body: []byte("x")}); err != nil || string(b) != "x" {
		t.Errorf("Encode = %q, %v", b, err)
	}
	for _, m := range []Message{{ID: "a"}, {Headers: map[string]string{"a": "b"}}, {RoutingKey: "r"}} {
		if _, err := raw.Encode(m); !errors.Is(err, ErrNotEnvelope) {
			t.Errorf("Encode(%+v) = %v, want ErrNotEnvelope", m, err)
		}
	}
}

func TestEnvelopeSlotComesFromTheID(t *testing.T) {
	t.Parallel()
	tp := Topic{Name: "orders", Slots: 64, Format: FormatEnvelope}
	a, _ := EncodeEnvelope(Message{ID: "order-42", Body: []byte("one")})
	b, _ := EncodeEnvelope(Message{ID: "order-42", Body: []byte("two"), Headers: map[string]string{"k": "v"}})
	want := Slot([]byte("order-42"), 64)
	for _, m := range [][]byte{a, b} {
		slot, id, err := tp.Locate(m)
		if err != nil || slot != want || id != "order-42" || tp.SlotOf(m) != want {
			t.Errorf("Locate(%s) = %d, %q, %v; want slot %d", m, slot, id, err, want)
		}
	}
}

// FuzzDecodeEnvelope checks that no input panics the decoder, and that every
// envelope it accepts encodes back to one that decodes to the same message.
func FuzzDecodeEnvelope(f *testing.F) {
	for _, seed := range []string{
		`{"id":"a","body":"x"}`,
		`{"id":"a","body_b64":"/wD+","headers":{"k":"v"},"routing_key":"r"}`,
		`{"id":"a","body":{"n":[1,2,{"x":null}]}}`,
		`{"id":"a","id":"b"}`,
		`{"id":"\ud800","body":"\u0000"}`,
		`{"id":"a"} trailing`,
		`[`, `{`, `{"id":`, `null`, ``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, member []byte) {
		m, err := DecodeEnvelope(member)
		if err != nil {
			if !errors.Is(err, ErrInvalidEnvelope) {
				t.Fatalf("error %v does not wrap ErrInvalidEnvelope", err)
			}
			return
		}
		id, err := EnvelopeID(member)
		if err != nil || id != m.ID {
			t.Fatalf("EnvelopeID = %q, %v; DecodeEnvelope id %q", id, err, m.ID)
		}
		again, err := EncodeEnvelope(m)
		if err != nil {
			t.Fatalf("EncodeEnvelope of a decoded %q: %v", member, err)
		}
		if got := (Topic{Format: FormatEnvelope}).unmapID(string(again)); got != m.ID {
			t.Fatalf("unmapID(%s) = %q, want %q", again, got, m.ID)
		}
		m2, err := DecodeEnvelope(again)
		if err != nil {
			t.Fatalf("DecodeEnvelope(%s) of the re-encoding: %v", again, err)
		}
		if diff := cmp.Diff(m, m2); diff != "" {
			t.Fatalf("re-encoding changed the message (-first +second):\n%s", diff)
		}
	})
}
