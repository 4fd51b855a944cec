package e2etest

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/internal/testing/testpki"
)

// PKI is a throwaway CA with a server certificate for 127.0.0.1 and a client
// certificate, as PEM files.
type PKI struct {
	CA, ServerCert, ServerKey, ClientCert, ClientKey string
}

// NewPKI writes a new PKI in a directory of the test's own.
func NewPKI(tb testing.TB) PKI {
	tb.Helper()
	dir := tb.TempDir()
	ca := testpki.NewCA(tb, "delaybridge test CA")
	srv := ca.Server(tb, "redis")
	cli := ca.Client(tb, "delaybridge")
	return PKI{
		CA:         testpki.WriteCert(tb, dir, "ca.crt", ca.DER),
		ServerCert: testpki.WriteCert(tb, dir, "redis.crt", srv.DER),
		ServerKey:  testpki.WriteKey(tb, dir, "redis.key", srv.Key),
		ClientCert: testpki.WriteCert(tb, dir, "client.crt", cli.DER),
		ClientKey:  testpki.WriteKey(tb, dir, "client.key", cli.Key),
	}
}

// TLSRedis is a redis-server of the test's own that speaks only TLS and
// requires a client certificate.
type TLSRedis struct {
	Addr  string
	PKI   PKI
	Admin *redis.Client // as user admin, with every permission
}

// Admin credentials of a TLSRedis; the default user is disabled.
const tlsAdminPassword = "admin-Kx81"

// StartTLSRedis runs redis-server on a free loopback port with TLS only
// (--port 0), client certificates of p required, and an admin user; the
// default user is switched off, so every client must log in.
func StartTLSRedis(tb testing.TB, p PKI) *TLSRedis {
	tb.Helper()
	r := &TLSRedis{PKI: p}
	srv := StartRedisServer(tb, "redis", redis.Options{TLSConfig: r.ClientTLS(tb)}, func(port int, dir string) []string {
		return []string{
			"--port", "0",
			"--bind", "127.0.0.1",
			"--tls-port", strconv.Itoa(port),
			"--tls-cert-file", p.ServerCert,
			"--tls-key-file", p.ServerKey,
			"--tls-ca-cert-file", p.CA,
			"--tls-auth-clients", "yes",
			"--save", "",
			"--appendonly", "no",
			"--dir", dir,
		}
	})
	r.Addr = srv.Addr
	ctx := tb.Context()
	admin := redis.NewClient(&redis.Options{Addr: r.Addr, TLSConfig: r.ClientTLS(tb)})
	defer admin.Close()
	for _, args := range [][]any{
		{"ACL", "SETUSER", "admin", "on", ">" + tlsAdminPassword, "~*", "&*", "+@all"},
		{"ACL", "SETUSER", "default", "off"},
	} {
		if err := admin.Do(ctx, args...).Err(); err != nil {
			tb.Fatalf("%v: %v", args[:3], err)
		}
	}
	r.Admin = redis.NewClient(&redis.Options{Addr: r.Addr, TLSConfig: r.ClientTLS(tb), Username: "admin", Password: tlsAdminPassword})
	tb.Cleanup(func() { _ = r.Admin.Close() })
	if err := r.Admin.Ping(ctx).Err(); err != nil {
		tb.Fatalf("log in as admin: %v", err)
	}
	return r
}

// ClientTLS trusts the test CA and presents the client certificate.
func (r *TLSRedis) ClientTLS(tb testing.TB) *tls.Config {
	tb.Helper()
	ca, err := os.ReadFile(r.PKI.CA)
	if err != nil {
		tb.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	cert, err := tls.LoadX509KeyPair(r.PKI.ClientCert, r.PKI.ClientKey)
	if err != nil {
		tb.Fatal(err)
	}
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
}
