package kafka

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/delaybridge/delaybridge/internal/testing/testpki"
	"github.com/delaybridge/delaybridge/sinks"
)

func TestSASLMechanisms(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ mech, kfakeMech string }{
		{"plain", "PLAIN"},
		{"scram-sha-256", "SCRAM-SHA-256"},
		{"scram-sha-512", "SCRAM-SHA-512"},
	} {
		t.Run(tt.mech, func(t *testing.T) {
			t.Parallel()
			topic := uniqueTopic(t)
			c := newCluster(t, topic, 1, kfake.EnableSASL(), kfake.Superuser(tt.kfakeMech, "bridge", "s3cret"))
			cfg := Config{Brokers: []string{addr(c)}, Topic: topic,
				SASLMechanism: tt.mech, SASLUsername: "bridge", SASLPassword: "s3cret"}
			s := newSink(t, cfg)
			if err := s.Ping(context.Background()); err != nil {
				t.Fatalf("ping: %v", err)
			}
			if err := publish(t, s, messages(tt.mech, 3)); err != nil {
				t.Fatalf("publish: %v", err)
			}

			cfg.SASLPassword = "wrong"
			bad := newSink(t, cfg)
			if err := bad.Ping(context.Background()); !errors.Is(err, sinks.ErrNotConnected) {
				t.Errorf("ping with a wrong password: %v, want ErrNotConnected", err)
			}
			wantClasses(t, publish(t, bad, messages("bad", 1)), "not-connected")
		})
	}
}

func TestTLS(t *testing.T) {
	t.Parallel()
	serverCfg, pool := selfSigned(t)
	topic := uniqueTopic(t)
	c := newCluster(t, topic, 1, kfake.TLS(serverCfg))
	s := newSink(t, Config{Brokers: []string{addr(c)}, Topic: topic, TLS: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}})
	if err := s.Ping(context.Background()); err != nil {
		t.Fatalf("ping over TLS: %v", err)
	}
	if err := publish(t, s, messages("tls", 3)); err != nil {
		t.Fatalf("publish over TLS: %v", err)
	}

	// Plaintext to a TLS listener never gets an answer it can read.
	plain := newSink(t, Config{Brokers: []string{addr(c)}, Topic: topic, WriteTimeout: time.Second})
	if err := plain.Ping(context.Background()); !errors.Is(err, sinks.ErrNotConnected) {
		t.Errorf("plaintext ping of a TLS broker: %v, want ErrNotConnected", err)
	}
}

// selfSigned returns a server TLS config for 127.0.0.1 and a pool trusting
// the CA that signed it.
func selfSigned(t *testing.T) (*tls.Config, *x509.CertPool) {
	t.Helper()
	ca := testpki.NewCA(t, "delaybridge test CA")
	srv := ca.Server(t, "kfake")
	return &tls.Config{Certificates: []tls.Certificate{srv.TLS()}, MinVersion: tls.VersionTLS12}, ca.Pool()
}
