package api

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
)

func TestOpenAPIDocumentIsValidOpenAPI31(t *testing.T) {
	doc, err := libopenapi.NewDocument(OpenAPI)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if v := doc.GetVersion(); v != "3.1.0" {
		t.Errorf("version %q, want 3.1.0", v)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatalf("validator: %v", errs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		for _, e := range verrs {
			t.Errorf("invalid: %s: %s %v", e.Message, e.Reason, e.SchemaValidationErrors)
		}
	}
}

// TestOpenAPIDescribesEveryRouteAndNoOther fails when a route is served but
// not described, or described but not served.
func TestOpenAPIDescribesEveryRouteAndNoOther(t *testing.T) {
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	var described []string
	for path, ops := range doc.Paths {
		for method := range ops {
			if method != "parameters" {
				described = append(described, strings.ToUpper(method)+" "+path)
			}
		}
	}
	slices.Sort(described)
	served := slices.Sorted(slices.Values(Routes()))
	if !slices.Equal(described, served) {
		t.Errorf("the document describes\n  %s\nthe server serves\n  %s", strings.Join(described, "\n  "), strings.Join(served, "\n  "))
	}
}

func TestDocsCopyOfOpenAPIIsCurrent(t *testing.T) {
	b, err := os.ReadFile("../docs/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, OpenAPI) {
		t.Error("docs/openapi.json differs from api/openapi.json: cp api/openapi.json docs/openapi.json")
	}
}

// TestAnswersMatchTheOpenAPIDocument sends requests to every route, with
// successes and refusals, and validates each request and answer against
// the document.
func TestAnswersMatchTheOpenAPIDocument(t *testing.T) {
	f := newFixture(t)
	doc, err := libopenapi.NewDocument(OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	for _, c := range [][3]string{
		{"POST", "/v1/topics/orders/messages", `{"id":"a","body":"x","headers":{"k":"v"},"routing_key":"r","delay":"1h"}`},
		{"POST", "/v1/topics/orders/messages", `{"id":"a","body":{"json":true},"due":4000000000000}`},
		{"POST", "/v1/topics/orders/messages", `{"id":"b","body_base64":"AP8=","due":"2096-01-01T00:00:00Z"}`},
		{"POST", "/v1/topics/legacy/messages", `{"id":"a","body":"x"}`},
		{"POST", "/v1/topics/orders/messages", `{"id":"z","body":"x","routing_key":"us.z"}`},
		{"POST", "/v1/topics/small/messages", `{"body":"` + strings.Repeat("x", smallMax+1) + `"}`},
		{"POST", "/v1/topics/orders/messages:batch", `{"messages":[{"id":"c","body":"x"},{"body":"y","due":"1960-01-01T00:00:00Z"}]}`},
		{"GET", "/v1/topics/orders/messages/a", ""},
		{"GET", "/v1/topics/orders/messages/b", ""},
		{"GET", "/v1/topics/orders/messages/none", ""},
		{"PATCH", "/v1/topics/orders/messages/a", `{"delay":"2h"}`},
		{"PATCH", "/v1/topics/orders/messages/a", `{"due":"1960-01-01T00:00:00Z"}`},
		{"DELETE", "/v1/topics/orders/messages/a", ""},
		{"DELETE", "/v1/topics/orders/messages/a", ""},
		{"GET", "/v1/topics", ""},
		{"GET", "/v1/openapi.json", ""},
	} {
		var body io.Reader
		if c[2] != "" {
			body = strings.NewReader(c[2])
		}
		req, _ := http.NewRequest(c[0], f.base+c[1], body)
		if c[2] != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		req.Header.Set("Authorization", "Bearer "+fullToken)
		resp, err := f.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(b))
		if c[2] != "" {
			req.Body = io.NopCloser(strings.NewReader(c[2]))
		}
		if ok, verrs := v.ValidateHttpRequestResponse(req, resp); !ok {
			for _, e := range verrs {
				t.Errorf("%s %s (%d %s): %s: %s %v", c[0], c[1], resp.StatusCode, b, e.Message, e.Reason, e.SchemaValidationErrors)
			}
		}
	}
}
