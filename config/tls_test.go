package config

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"path/filepath"
	"strings"
	"testing"
)

func TestTLSConfigDisabledIsNil(t *testing.T) {
	c, err := TLS{CAFile: "/nonexistent"}.Config("redis.test")
	if c != nil || err != nil {
		t.Errorf("Config() of disabled TLS = %v, %v; want nil, nil", c, err)
	}
}

// TestTLSConfigVerifiesAgainstTheCA completes real handshakes (in memory)
// against a server whose certificate the throwaway CA signed and which
// requires a client certificate from that CA.
func TestTLSConfigVerifiesAgainstTheCA(t *testing.T) {
	pki := newTestPKI(t)
	serverCert, err := tls.LoadX509KeyPair(pki.ServerCert, pki.ServerKey)
	if err != nil {
		t.Fatalf("load server certificate: %v", err)
	}
	clientCAs := x509.NewCertPool()
	clientCAs.AddCert(pki.CA)
	server := &tls.Config{Certificates: []tls.Certificate{serverCert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clientCAs}

	full := TLS{Enabled: true, CAFile: pki.CAFile, CertFile: pki.ClientCert, KeyFile: pki.ClientKey}
	tests := []struct {
		name       string
		tls        TLS
		serverName string
		wantErr    string // "" for a completed handshake
	}{
		{"CA and client certificate", full, "redis.test", ""},
		{"wrong server name", full, "other.test", "certificate is valid for redis.test"},
		{"no CA: system roots do not know it", TLS{Enabled: true, CertFile: pki.ClientCert, KeyFile: pki.ClientKey}, "redis.test", "unknown authority"},
		{"insecure skips verification", TLS{Enabled: true, CertFile: pki.ClientCert, KeyFile: pki.ClientKey, InsecureSkipVerify: true}, "other.test", ""},
		{"no client certificate", TLS{Enabled: true, CAFile: pki.CAFile}, "redis.test", "certificate required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := tt.tls.Config(tt.serverName)
			if err != nil {
				t.Fatalf("Config: %v", err)
			}
			if cfg.MinVersion < tls.VersionTLS12 {
				t.Errorf("MinVersion = %x, want at least TLS 1.2", cfg.MinVersion)
			}
			err = handshake(t, cfg, server)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("handshake: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("handshake error = %v, want one saying %q", err, tt.wantErr)
			}
		})
	}
}

// handshake runs a TLS handshake over an in-memory pipe and returns the
// first error of either side.
func handshake(t *testing.T, client, server *tls.Config) error {
	t.Helper()
	c, s := net.Pipe()
	done := make(chan error, 1)
	go func() {
		conn := tls.Server(s, server)
		err := conn.Handshake()
		if err == nil {
			// TLS 1.3 reports a rejected client certificate on the
			// client's first read, so the server sends a byte.
			_, err = conn.Write([]byte{1})
		}
		s.Close()
		done <- err
	}()
	conn := tls.Client(c, client)
	err := conn.Handshake()
	if err == nil {
		_, err = conn.Read(make([]byte, 1))
	}
	c.Close()
	serverErr := <-done
	if err == nil {
		err = serverErr
	}
	return err
}

func TestTLSConfigErrorsNameTheFile(t *testing.T) {
	pki := newTestPKI(t)
	dir := t.TempDir()
	garbage := writeFile(t, dir, "garbage.pem", "not PEM")
	missing := filepath.Join(dir, "missing.pem")
	tests := []struct {
		name string
		tls  TLS
		want []string // in the error
	}{
		{"missing CA", TLS{CAFile: missing}, []string{missing}},
		{"CA not PEM", TLS{CAFile: garbage}, []string{garbage, "no PEM certificate"}},
		{"certificate without key", TLS{CertFile: pki.ClientCert}, []string{pki.ClientCert, "key file"}},
		{"key without certificate", TLS{KeyFile: pki.ClientKey}, []string{pki.ClientKey}},
		{"key of another certificate", TLS{CertFile: pki.ClientCert, KeyFile: pki.ServerKey}, []string{pki.ClientCert, pki.ServerKey}},
		{"certificate not PEM", TLS{CertFile: garbage, KeyFile: pki.ClientKey}, []string{garbage}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.tls.Enabled = true
			cfg, err := tt.tls.Config("redis.test")
			if err == nil {
				t.Fatalf("Config() = %v, want an error", cfg)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
}
