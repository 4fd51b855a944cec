package envelope

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
			member, err := Encode(tc.m)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			if tc.want != "" && string(member) != tc.want {
				t.Errorf("member\n got %s\nwant %s", member, tc.want)
			}
			got, err := Decode(member)
			if err != nil {
				t.Fatalf("Decode(%s): %v", member, err)
			}
			want := tc.m
			if want.Body == nil {
				want.Body = []byte{}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
			again, _ := Encode(got)
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
		m, err := Decode([]byte(tc.member))
		if err != nil {
			t.Errorf("Decode(%s): %v", tc.member, err)
			continue
		}
		if string(m.Body) != tc.body {
			t.Errorf("Decode(%s) body %q, want %q", tc.member, m.Body, tc.body)
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
		m, err := Decode([]byte(member))
		if err != nil {
			t.Errorf("Decode(%s): %v", member, err)
			continue
		}
		if string(m.Body) != tc.body {
			t.Errorf("Decode(%s) body %q, want %q", member, m.Body, tc.body)
		}
	}
}

// bigBodyAllocs bounds the bytes Decode allocates for a large
// string body, as a multiple of the member: the decoder's buffer grows by
// doubling (about 4x in all) and the body is taken from its own copy of the
// literal. Unescaping it through a string and copying that again, as the
// decoder once did, cost about 7x: an 8 MiB member took 0.6 s on a loaded
// 2-core machine, and its slot's messages waited for it.
const bigBodyAllocs = 6

func TestDecodeEnvelopeOfALargeBodyCopiesItFewTimes(t *testing.T) {
	body := strings.Repeat("q", 8<<20)
	member, err := Encode(Message{ID: "big", Body: []byte(body)})
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	m, err := Decode(member)
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
		_, err := Decode([]byte(tc.member))
		if err == nil {
			t.Errorf("Decode(%q) accepted it, want an error about %s", tc.member, tc.why)
			continue
		}
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("Decode(%q) = %v, want ErrInvalid about %s", tc.member, err, tc.why)
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
		if b, err := Encode(m); !errors.Is(err, ErrInvalid) {
			t.Errorf("Encode(%+v) = %s, %v; want ErrInvalid", m, b, err)
		}
	}
}
