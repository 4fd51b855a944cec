package amqp

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/delaybridge/delaybridge/config"
	"github.com/delaybridge/delaybridge/internal/testing/faultproxy"
	"github.com/delaybridge/delaybridge/internal/testing/testpki"
	"github.com/delaybridge/delaybridge/sinks"
	"github.com/delaybridge/delaybridge/sinks/sinktest"
)

// The test broker speaks plain AMQP only, so these tests put a TLS
// terminator of their own in front of it: the sink dials amqps:// to the
// terminator, which requires a client certificate signed by the test CA and
// forwards the decrypted bytes to the broker.

func TestTLSSinkWithClientCertificateDeliversEveryMessage(t *testing.T) {
	p := newTestPKI(t)
	term := startTLSTerminator(t, p)
	d := newDest(t, nil)
	c := d.consume(t)
	s, _ := tlsSinkFromEnv(t, d, map[string]string{
		"AMQP_URL":       term.url(t, ""),
		"AMQP_CA_FILE":   p.CA,
		"AMQP_CERT_FILE": p.ClientCert,
		"AMQP_KEY_FILE":  p.ClientKey,
	})
	waitConnected(t, s)

	msgs := sinktest.Messages(20)
	if err := publish(t, s, msgs); err != nil {
		t.Fatalf("publish over TLS: %v", err)
	}
	sinktest.CheckReceived(t, msgs, c.read(t, len(msgs), 30*time.Second))

	verified, refused := term.stats()
	if verified < 1 || len(refused) != 0 {
		t.Fatalf("terminator: %d verified client certificates, refused %v; want the sink's connection verified, none refused", verified, refused)
	}
}

func TestTLSCertificateProblemsLeaveTheSinkNotConnected(t *testing.T) {
	p := newTestPKI(t)
	// The secret is never sent: TLS fails before AMQP authentication. It only
	// shows whether errors and logs leak the password.
	const secret = "tls-test-Pw93q"
	tests := []struct {
		name     string
		vars     map[string]string
		wantErr  string // in the sink's Ping and Publish errors
		wantTerm string // in the terminator's handshake error
	}{
		{
			name:     "server certificate from another CA",
			vars:     map[string]string{"AMQP_CA_FILE": p.OtherCA, "AMQP_CERT_FILE": p.ClientCert, "AMQP_KEY_FILE": p.ClientKey},
			wantErr:  "x509: certificate signed by unknown authority",
			wantTerm: "bad certificate",
		},
		{
			name:     "no client certificate",
			vars:     map[string]string{"AMQP_CA_FILE": p.CA},
			wantErr:  "tls: certificate required",
			wantTerm: "client didn't provide a certificate",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			term := startTLSTerminator(t, p)
			d := newDest(t, nil)
			c := d.consume(t)
			tt.vars["AMQP_URL"] = term.url(t, secret)
			s, logs := tlsSinkFromEnv(t, d, tt.vars)

			var pingErr error
			eventually(t, "ping names the certificate problem", func() bool {
				pingErr = s.Ping(context.Background())
				return pingErr != nil && strings.Contains(pingErr.Error(), tt.wantErr)
			})
			pubErr := publish(t, s, sinktest.Messages(3))
			for what, err := range map[string]error{"ping": pingErr, "publish": pubErr} {
				if !errors.Is(err, sinks.ErrNotConnected) {
					t.Errorf("%s: %v, want an error wrapping ErrNotConnected", what, err)
				}
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("%s: %v, want it to mention %q", what, err, tt.wantErr)
				} else if strings.Contains(err.Error(), secret) {
					t.Errorf("%s error shows the password: %v", what, err)
				}
			}
			c.quiet(t, 300*time.Millisecond)

			verified, refused := term.stats()
			if verified != 0 {
				t.Errorf("terminator verified and forwarded %d connections, want none", verified)
			}
			if len(refused) == 0 || !strings.Contains(refused[0].Error(), tt.wantTerm) {
				t.Errorf("terminator refused %v, want a handshake failing with %q", refused, tt.wantTerm)
			}
			if err := s.Close(); err != nil {
				t.Fatalf("close: %v", err)
			}
			if strings.Contains(logs.String(), secret) {
				t.Errorf("logs show the password:\n%s", logs.String())
			}
		})
	}
}

// tlsSinkFromEnv builds the sink the way the daemon does (internal/cli): config.Load
// reads the DELAYBRIDGE_* variables (vars, named without the prefix, and a
// topic publishing to d), the URL's host names the server, and the config
// package turns the CA, certificate and key files into the tls.Config. It
// also returns the sink's log.
func tlsSinkFromEnv(t *testing.T, d *dest, vars map[string]string) (*Sink, *syncBuffer) {
	t.Helper()
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, config.Prefix+"_") && !strings.HasPrefix(name, config.Prefix+"_TEST_") {
			t.Setenv(name, "") // restores the old value at cleanup
			_ = os.Unsetenv(name)
		}
	}
	vars["TOPICS"] = "tlstest"
	vars["TOPIC_TLSTEST_SINK"] = "amqp"
	vars["TOPIC_TLSTEST_EXCHANGE"] = d.exchange
	vars["TOPIC_TLSTEST_ROUTING_KEY"] = d.key
	for k, v := range vars {
		t.Setenv(config.Prefix+"_"+k, v)
	}
	cfg, err := config.Load()
	if err != nil {
		t.Fatalf("load config: %v", err)
	}
	host := ""
	if u, err := url.Parse(cfg.AMQP.URL); err == nil {
		host = u.Hostname()
	}
	tlsCfg, err := cfg.AMQP.TLS.Config(host)
	if err != nil {
		t.Fatalf("TLS config: %v", err)
	}
	if tlsCfg == nil {
		t.Fatalf("config of %s enables no TLS", redact(cfg.AMQP.URL))
	}
	logs := &syncBuffer{}
	topic := cfg.Topics[0]
	s, err := New(Config{
		URL:            cfg.AMQP.URL,
		TLS:            tlsCfg,
		Exchange:       topic.Exchange,
		RoutingKey:     topic.RoutingKey,
		MaxMessageSize: cfg.AMQP.MaxMessageSize,
		Name:           t.Name(),
	}, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatalf("new sink: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, logs
}

// syncBuffer is a bytes.Buffer safe for the sink's goroutines to log into.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// testPKI is a throwaway CA with a server certificate for 127.0.0.1 and a
// client certificate, and a second CA that signed neither. The client side
// is PEM files, as the daemon reads them.
type testPKI struct {
	CA, OtherCA, ClientCert, ClientKey string
	caPool                             *x509.CertPool
	server                             tls.Certificate
}

func newTestPKI(t *testing.T) testPKI {
	t.Helper()
	dir := t.TempDir()
	ca := testpki.NewCA(t, "delaybridge test CA")
	other := testpki.NewCA(t, "delaybridge other CA")
	cli := ca.Client(t, "delaybridge")
	return testPKI{
		CA:         testpki.WriteCert(t, dir, "ca.crt", ca.DER),
		OtherCA:    testpki.WriteCert(t, dir, "other-ca.crt", other.DER),
		ClientCert: testpki.WriteCert(t, dir, "client.crt", cli.DER),
		ClientKey:  testpki.WriteKey(t, dir, "client.key", cli.Key),
		caPool:     ca.Pool(),
		server:     ca.Server(t, "rabbitmq").TLS(),
	}
}

// tlsTerminator accepts TLS on loopback with the test PKI's server
// certificate, requires and verifies a client certificate signed by its CA,
// and forwards each verified connection to the broker (a faultproxy serving
// a listener that completes the handshake in Accept). It stops at the
// test's cleanup.
type tlsTerminator struct {
	*handshakes
	proxy *faultproxy.Proxy
}

func startTLSTerminator(t *testing.T, p testPKI) *tlsTerminator {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen for TLS: %v", err)
	}
	hs := &handshakes{Listener: ln, config: &tls.Config{
		Certificates: []tls.Certificate{p.server},
		ClientCAs:    p.caPool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		MinVersion:   tls.VersionTLS12,
	}}
	proxy := faultproxy.Serve(context.Background(), hs, brokerAddr(t))
	t.Cleanup(func() { _ = proxy.Close() })
	return &tlsTerminator{handshakes: hs, proxy: proxy}
}

// url is the test broker's URL with the terminator's address and the amqps
// scheme; a non-empty password replaces the URL's.
func (term *tlsTerminator) url(t *testing.T, password string) string {
	t.Helper()
	uri, err := amqp091.ParseURI(testURL())
	if err != nil {
		t.Fatalf("parse DELAYBRIDGE_TEST_AMQP_URL: %v", err)
	}
	host, port, _ := net.SplitHostPort(term.proxy.Addr())
	uri.Scheme, uri.Host = "amqps", host
	uri.Port, _ = strconv.Atoi(port)
	if password != "" {
		uri.Password = password
	}
	return uri.String()
}

// handshakes is a listener whose Accept returns only connections that
// completed a TLS handshake with config, and records every handshake.
type handshakes struct {
	net.Listener
	config *tls.Config

	mu       sync.Mutex
	verified int     // handshakes with a client certificate the CA signed
	refused  []error // failed handshakes, as the server saw them
}

func (h *handshakes) Accept() (net.Conn, error) {
	for {
		c, err := h.Listener.Accept()
		if err != nil {
			return nil, err
		}
		tc := tls.Server(c, h.config)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = tc.HandshakeContext(ctx)
		cancel()
		h.mu.Lock()
		if err != nil {
			h.refused = append(h.refused, err)
		} else {
			h.verified++ // RequireAndVerifyClientCert: a handshake is a verified client
		}
		h.mu.Unlock()
		if err == nil {
			return tc, nil
		}
		_ = c.Close()
	}
}

// stats is what the terminator saw so far.
func (h *handshakes) stats() (verified int, refused []error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.verified, append([]error(nil), h.refused...)
}
