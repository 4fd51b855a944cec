package api

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/internal/testing/testpki"
	"github.com/delaybridge/delaybridge/queue"
)

func TestEveryRouteButOpenAPINeedsAToken(t *testing.T) {
	f := newFixture(t)
	routes := [][2]string{
		{"POST", "/v1/topics/orders/messages"}, {"POST", "/v1/topics/orders/messages:batch"},
		{"GET", "/v1/topics/orders/messages/a"}, {"PATCH", "/v1/topics/orders/messages/a"},
		{"DELETE", "/v1/topics/orders/messages/a"}, {"GET", "/v1/topics"},
	}
	for _, rt := range routes {
		for _, auth := range []string{"", "Bearer wrong-token-0123456789abcdef", "Basic " + fullToken, "Bearer", fullToken,
			"Bearer " + fullToken[:len(fullToken)-1], "Bearer " + fullToken + "x"} {
			req, _ := http.NewRequest(rt[0], f.base+rt[1], strings.NewReader(`{"messages":[{"body":"x"}],"delay":"1s"}`))
			req.Header.Set("Content-Type", "application/json")
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			resp, err := f.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(b), `"code":"unauthorized"`) ||
				!strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("%s %s with Authorization %q: %d %s", rt[0], rt[1], auth, resp.StatusCode, b)
			}
		}
	}
	if left := f.keys(); len(left) != 0 {
		t.Errorf("unauthorized requests wrote %v", left)
	}
	// The scheme is case-insensitive (RFC 7235).
	f.want(f.doType("GET", "/v1/topics", "", "", ""), http.StatusUnauthorized, "unauthorized")
	r := f.do("GET", "/v1/openapi.json", "", "")
	f.want(r, http.StatusOK, "")
	if r.json["openapi"] == nil {
		t.Errorf("GET /v1/openapi.json without a token: %.200s", r.raw)
	}
}

func TestTokenLimitedToTopicsIsForbiddenElsewhere(t *testing.T) {
	f := newFixture(t)
	f.want(f.do("POST", "/v1/topics/orders/messages", ordersOnlyToken, `{"id":"a","body":"x","delay":"1h"}`), http.StatusCreated, "")
	for _, rt := range [][3]string{
		{"POST", "/v1/topics/legacy/messages", `{"body":"x"}`},
		{"POST", "/v1/topics/legacy/messages:batch", `{"messages":[{"body":"x"}]}`},
		{"GET", "/v1/topics/small/messages/a", ""},
		{"PATCH", "/v1/topics/small/messages/a", `{"delay":"1s"}`},
		{"DELETE", "/v1/topics/small/messages/a", ""},
		// A topic that does not exist is forbidden too: the token may not
		// learn which topics exist.
		{"POST", "/v1/topics/nope/messages", `{"body":"x"}`},
	} {
		f.want(f.do(rt[0], rt[1], ordersOnlyToken, rt[2]), http.StatusForbidden, "forbidden")
	}
	if n := len(f.keys()); n != 2 { // orders' slot and its :ids index
		t.Errorf("forbidden requests wrote: %v", f.keys())
	}
	f.want(f.do("DELETE", "/v1/topics/orders/messages/a", ordersOnlyToken, ""), http.StatusNoContent, "")
}

func TestInsecureServesWithoutTokenOnlyOnPurpose(t *testing.T) {
	rdb, prefix := redisAndPrefix(t)
	if _, err := New(Options{Queue: queue.New(rdb), Prefix: prefix}); err == nil {
		t.Fatal("New without tokens and not insecure: no error")
	}
	srv, err := New(Options{Queue: queue.New(rdb), Prefix: prefix, Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, srv, nil)
	resp, err := http.Get("http://" + addr + "/v1/topics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("insecure: GET /v1/topics = %d", resp.StatusCode)
	}
}

func TestServesTLS(t *testing.T) {
	rdb, prefix := redisAndPrefix(t)
	ca := testpki.NewCA(t, "api test CA")
	cert := ca.Server(t, "127.0.0.1")
	srv, err := New(Options{Queue: queue.New(rdb), Prefix: prefix, Tokens: []Token{{Secret: fullToken}}})
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, srv, &tls.Config{Certificates: []tls.Certificate{cert.TLS()}, MinVersion: tls.VersionTLS12})
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}}}
	defer client.CloseIdleConnections()
	req, _ := http.NewRequestWithContext(context.Background(), "GET", "https://"+addr+"/v1/topics", nil)
	req.Header.Set("Authorization", "Bearer "+fullToken)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("HTTPS: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("HTTPS GET /v1/topics = %d", resp.StatusCode)
	}
	plain, err := http.Get("http://" + addr + "/v1/topics")
	if err == nil {
		plain.Body.Close()
		if plain.StatusCode < 400 {
			t.Errorf("plain HTTP to the TLS listener: %d", plain.StatusCode)
		}
	}
}
