// Package testpki makes throwaway certificate authorities and certificates
// for tests that run TLS against real servers (Redis, RabbitMQ, Kafka):
// ECDSA P-256 keys, valid from an hour ago for a day, written as the PEM
// files the daemon's *_CA_FILE, *_CERT_FILE and *_KEY_FILE variables name.
package testpki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a certificate authority that issues certificates.
type CA struct{ Issued }

// Issued is a key and the certificate a CA signed for it.
type Issued struct {
	Key  *ecdsa.PrivateKey
	Cert *x509.Certificate
	DER  []byte
}

// NewCA makes a self-signed CA named cn.
func NewCA(tb testing.TB, cn string) *CA {
	tb.Helper()
	return &CA{issue(tb, cn, nil, nil, func(c *x509.Certificate) {
		c.IsCA = true
		c.BasicConstraintsValid = true
		c.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign
	})}
}

// Pool is a certificate pool holding only ca.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// Server issues a server certificate for 127.0.0.1 and localhost.
func (ca *CA) Server(tb testing.TB, cn string) Issued {
	tb.Helper()
	return issue(tb, cn, ca.Cert, ca.Key, func(c *x509.Certificate) {
		c.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
		c.DNSNames = []string{"localhost"}
		c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	})
}

// Client issues a client certificate.
func (ca *CA) Client(tb testing.TB, cn string) Issued {
	tb.Helper()
	return issue(tb, cn, ca.Cert, ca.Key, func(c *x509.Certificate) {
		c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	})
}

// TLS is the certificate as crypto/tls serves it.
func (is Issued) TLS() tls.Certificate {
	return tls.Certificate{Certificate: [][]byte{is.DER}, PrivateKey: is.Key, Leaf: is.Cert}
}

// WriteCert writes der as a PEM certificate dir/name and returns its path.
func WriteCert(tb testing.TB, dir, name string, der []byte) string {
	tb.Helper()
	return writePEM(tb, filepath.Join(dir, name), "CERTIFICATE", der)
}

// WriteKey writes key as a PEM PKCS #8 private key dir/name and returns its
// path.
func WriteKey(tb testing.TB, dir, name string, key *ecdsa.PrivateKey) string {
	tb.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		tb.Fatalf("marshal key %s: %v", name, err)
	}
	return writePEM(tb, filepath.Join(dir, name), "PRIVATE KEY", der)
}

func writePEM(tb testing.TB, path, typ string, der []byte) string {
	tb.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		tb.Fatalf("write %s: %v", path, err)
	}
	return path
}

// issue makes a key and a certificate for cn signed by parent (self-signed
// when parent is nil), shaped by edit.
func issue(tb testing.TB, cn string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, edit func(*x509.Certificate)) Issued {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatalf("key for %s: %v", cn, err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		tb.Fatalf("serial for %s: %v", cn, err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
	edit(tmpl)
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		tb.Fatalf("certificate for %s: %v", cn, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatalf("parse certificate for %s: %v", cn, err)
	}
	return Issued{Key: key, Cert: cert, DER: der}
}
