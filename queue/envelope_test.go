package queue

import (
	"bytes"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEnvelopeRoundTripKeepsIDBodyHeadersAndRoutingKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		m    Message
		want string // the member, when it is worth pinning
	}{
		{"text", Message{ID: "order-42", Body: []byte(`{"order":42}`)}, `{"id":"order-42","body":"{\"order\":42}"}`},
		{"empty body", Message{ID: "e", Body: nil}, `{"id":"e","body":""}`},
		{"binary body", Message{ID: "bin", Body: []byte{0xff, 0x00, 0xfe}}, `{"id":"bin","body_b64":"/wD+"}`},
		{"headers and routing key", Message{ID: "h", Body: []byte("x"), Headers: map[string]string{"b": "2", "a": "1"}, RoutingKey: "orders.eu"},
			`{"id":"h","body":"x","headers":{"a":"1","b":"2"},"routing_key":"orders.eu"}`},
		{"unicode and html", Message{ID: "ördér/✓ \"q\"", Body: []byte("<a href='x'>&</a>\n")}, `{"id":"ördér/✓ \"q\"","body":"<a href='x'>&</a>\n"}`},
		{"longest id", Message{ID: strings.Repeat("i", MaxIDLen), Body: []byte("x")}, ""},
		{"binary key", Message{ID: "k", Body: []byte("x"), RoutingKey: "\x00\xff"}, `{"id":"k","body":"x","routing_key_b64":"AP8="}`},
		{"key with a zero byte", Message{ID: "k0", Body: []byte("x"), RoutingKey: "a\x00b"}, `{"id":"k0","body":"x","routing_key":"a\u0000b"}`},
		{"empty key", Message{ID: "k", Body: []byte("x"), EmptyKey: true}, `{"id":"k","body":"x","routing_key_b64":""}`},
		{"key longer than an AMQP routing key", Message{ID: "k", Body: []byte("x"), RoutingKey: strings.Repeat("r", MaxFieldLen+1)}, ""},
		{"binary header values", Message{ID: "h", Body: []byte("x"), Headers: map[string]string{"t": "text", "b": "\xff\x00"}},
			`{"id":"h","body":"x","headers":{"t":"text"},"headers_b64":{"b":"/wA="}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			member, err := EncodeEnvelope(tc.m)
			if err != nil {
				t.Fatalf("EncodeEnvelope: %v", err)
			}
			if tc.want != "" && string(member) != tc.want {
				t.Errorf("member\n got %s\nwant %s", member, tc.want)
			}
			got, err := DecodeEnvelope(member)
			if err != nil {
				t.Fatalf("DecodeEnvelope(%s): %v", member, err)
			}
			want := tc.m
			if want.Body == nil {
				want.Body = []byte{}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
			again, _ := EncodeEnvelope(got)
			if !bytes.Equal(again, member) {
				t.Errorf("encoding is not deterministic: %s then %s", member, again)
			}
		})
	}
}

func TestDecodeEnvelopeBodyForms(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ member, body string }{
		{`{"id":"a","body":"text"}`, "text"},
		{`{"id":"a","body":{"order": 42, "x":[1,2]}}`, `{"order": 42, "x":[1,2]}`},
		{`{"id":"a","body":[1, 2]}`, `[1, 2]`},
		{`{"id":"a","body":12.5e3}`, `12.5e3`},
		{`{"id":"a","body":true}`, `true`},
		{`{"id":"a","body":null}`, ``},
		{`{"id":"a"}`, ``},
		{`{"id":"a","body_b64":"aGk="}`, `hi`},
		{`{"id":"a","body":null,"body_b64":"aGk="}`, `hi`},
		{` { "id" : "a" , "headers" : null , "routing_key" : null } `, ``},
	} {
		m, err := DecodeEnvelope([]byte(tc.member))
		if err != nil {
			t.Errorf("DecodeEnvelope(%s): %v", tc.member, err)
			continue
		}
		if string(m.Body) != tc.body {
			t.Errorf("DecodeEnvelope(%s) body %q, want %q", tc.member, m.Body, tc.body)
		}
	}
}

// A string body is its text whether or not it holds escapes: the decoder
// takes a body without escapes as it stands and unescapes any other.
func TestDecodeEnvelopeStringBodyWithAndWithoutEscapes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ literal, body string }{
		{`""`, ``},
		{`"plain text, é and 日本"`, "plain text, é and 日本"},
		{`"{\"n\":1}"`, `{"n":1}`},
		{`"a\\b\n\t\u00e9\ud83d\ude00"`, "a\\b\n\té😀"},
		{`"lone \ud800 surrogate"`, "lone \ufffd surrogate"},
		{`"/ and \/"`, "/ and /"},
	} {
		member := `{"id":"a","body":` + tc.literal + `}`
		m, err := DecodeEnvelope([]byte(member))
		if err != nil {
			t.Errorf("DecodeEnvelope(%s): %v", member, err)
			continue
		}
		if string(m.Body) != tc.body {
			t.Errorf("DecodeEnvelope(%s) body %q, want %q", member, m.Body, tc.body)
		}
	}
}

// bigBodyAllocs bounds the bytes DecodeEnvelope allocates for a large
// string body, as a multiple of the member: the decoder's buffer grows by
// doubling (about 4x in all) and the body is taken from its own copy of the
// literal. Unescaping it through a string and copying that again, as the
// decoder once did, cost about 7x: an 8 MiB member took 0.6 s on a loaded
// 2-core machine, and its slot's messages waited for it.
const bigBodyAllocs = 6

func TestDecodeEnvelopeOfALargeBodyCopiesItFewTimes(t *testing.T) {
	body := strings.Repeat("q", 8<<20)
	member, err := EncodeEnvelope(Message{ID: "big", Body: []byte(body)})
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	m, err := DecodeEnvelope(member)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Body) != body {
		t.Fatalf("body of %d bytes differs from the %d encoded", len(m.Body), len(body))
	}
	got := float64(after.TotalAlloc-before.TotalAlloc) / float64(len(member))
	t.Logf("decoding a member of %d bytes allocated %.1fx its size", len(member), got)
	if got > bigBodyAllocs {
		t.Errorf("decoding a member of %d bytes allocated %.1fx its size, want at most %dx", len(member), got, bigBodyAllocs)
	}
}

func TestDecodeEnvelopeRejectsWhatIsNotAnEnvelope(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ member, why string }{
		{``, "not a JSON object"},
		{`payment-timeout`, "not a JSON object"},
		{`["id"]`, "not a JSON object"},
		{`"id"`, "not a JSON object"},
		{`{"order":42}`, `unknown field "order"`},
		{`{"body":"x"}`, "id is empty"},
		{`{"id":""}`, "id is empty"},
		{`{"id":null}`, "id is empty"},
		{`{"id":42}`, "id must be a string"},
		{`{"id":"` + strings.Repeat("i", MaxIDLen+1) + `"}`, "more than 255"},
		{`{"id":"a\nb"}`, "control character"},
		{`{"id":"a","id":"b"}`, `"id" appears twice`},
		{`{"id":"a","ID":"b"}`, `unknown field "ID"`},
		{`{"id":"a","routingKey":"x"}`, `unknown field "routingKey"`},
		{`{"id":"a","body":"x","body_b64":"eA=="}`, "both body and body_b64"},
		{`{"id":"a","body_b64":"not base64!"}`, "not standard base64"},
		{`{"id":"a","body_b64":7}`, "body_b64 must be a string"},
		{`{"id":"a","headers":{"k":1}}`, "headers must be an object of strings"},
		{`{"id":"a","headers":["k"]}`, "headers must be an object of strings"},
		{`{"id":"a","headers":{"":"v"}}`, "header name"},
		{`{"id":"a","headers":{"X-Delaybridge-Due":"0"}}`, "delaybridge's own"},
		{`{"id":"a","routing_key":"` + strings.Repeat("r", MaxFieldLen+1) + `"}`, "routing_key"},
		{`{"id":"a","routing_key":"k","routing_key_b64":"aw=="}`, "both routing_key and routing_key_b64"},
		{`{"id":"a","routing_key_b64":"not base64!"}`, "routing_key_b64 is not standard base64"},
		{`{"id":"a","routing_key_b64":1}`, "routing_key_b64 must be a string"},
		{`{"id":"a","headers":{"k":"v"},"headers_b64":{"k":"dg=="}}`, "in both headers and headers_b64"},
		{`{"id":"a","headers_b64":{"k":"!"}}`, "headers_b64"},
		{`{"id":"a","headers_b64":{"x-delaybridge-id":"dg=="}}`, "delaybridge's own"},
		{`{"id":"a"} {"id":"b"}`, "data after the JSON object"},
		{`{"id":"a"}x`, "data after the JSON object"},
		{`{"id":"a"`, "EOF"},
		{`{"id":"a","body":"` + "\xff" + `"}`, "not valid UTF-8"},
	} {
		_, err := DecodeEnvelope([]byte(tc.member))
		if err == nil {
			t.Errorf("DecodeEnvelope(%q) accepted it, want an error about %s", tc.member, tc.why)
			continue
		}
		if !errors.Is(err, ErrInvalidEnvelope) || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("DecodeEnvelope(%q) = %v, want ErrInvalidEnvelope about %s", tc.member, err, tc.why)
		}
	}
}

func TestEncodeEnvelopeRefusesWhatDecodeWouldReject(t *testing.T) {
	t.Parallel()
	for _, m := range []Message{
		{ID: ""},
		{ID: strings.Repeat("x", MaxIDLen+1)},
		{ID: "tab\t"},
		{ID: "\xff"},
		{ID: "a", Headers: map[string]string{"x-delaybridge-id": "b"}},
		{ID: "a", Headers: map[string]string{"\xff": "v"}},
		{ID: "a", RoutingKey: strings.Repeat("r", MaxKeyLen+1)},
	} {
		if b, err := EncodeEnvelope(m); !errors.Is(err, ErrInvalidEnvelope) {
			t.Errorf("EncodeEnvelope(%+v) = %s, %v; want ErrInvalidEnvelope", m, b, err)
		}
	}
}

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
