package config

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
)

// Config builds the client TLS configuration, or returns nil when TLS is not
// enabled. serverName is the host name the server's certificate must carry;
// empty lets crypto/tls take it from each dialled address (Redis Cluster and
// Sentinel dial many hosts). Errors name the file at fault.
func (t TLS) Config(serverName string) (*tls.Config, error) {
	if !t.Enabled {
		return nil, nil
	}
	c := &tls.Config{
		ServerName:         serverName,
		MinVersion:         tls.VersionTLS12,
		InsecureSkipVerify: t.InsecureSkipVerify, //nolint:gosec // opt-in, documented as tests only
	}
	if t.CAFile != "" {
		pool, err := loadCAPool(t.CAFile)
		if err != nil {
			return nil, err
		}
		c.RootCAs = pool
	}
	if t.CertFile != "" || t.KeyFile != "" {
		cert, err := loadKeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, err
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

// loadCAPool reads a PEM bundle. The pool replaces the system roots: a
// private CA is the reason to name one.
func loadCAPool(path string) (*x509.CertPool, error) {
	pool, err := readCAPool(path)
	if err != nil {
		return nil, fmt.Errorf("CA file %s: %w", path, err)
	}
	return pool, nil
}

// readCAPool is loadCAPool with errors that do not repeat the path, for
// FieldErrors that show it already.
func readCAPool(path string) (*x509.CertPool, error) {
	b, err := readFile(path, maxPEMFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, errNoPEMCert
	}
	return pool, nil
}

var errNoPEMCert = errors.New("holds no PEM certificate")

// loadKeyPair reads a client certificate and its key; both are required.
func loadKeyPair(certFile, keyFile string) (tls.Certificate, error) {
	switch {
	case certFile == "":
		return tls.Certificate{}, fmt.Errorf("client key file %s: needs a client certificate file too", keyFile)
	case keyFile == "":
		return tls.Certificate{}, fmt.Errorf("client certificate file %s: needs a key file too", certFile)
	}
	cert, err := readKeyPair(certFile, keyFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("load client certificate %s and key %s: %w", certFile, keyFile, err)
	}
	return cert, nil
}

// readKeyPair is tls.LoadX509KeyPair through readFile: regular files of a
// bounded size, read within a deadline.
func readKeyPair(certFile, keyFile string) (tls.Certificate, error) {
	certPEM, err := readFile(certFile, maxPEMFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("certificate %w", err)
	}
	keyPEM, err := readFile(keyFile, maxPEMFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("key %w", err)
	}
	return tls.X509KeyPair(certPEM, keyPEM)
}
