package chaos

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
	"github.com/delaybridge/delaybridge/internal/testing/testpki"
)

// pki is a throwaway CA with a server certificate for 127.0.0.1 and a client
// certificate, as PEM files.
type pki struct {
	CA, ServerCert, ServerKey, ClientCert, ClientKey string
}

func newPKI(t *testing.T) pki {
	t.Helper()
	dir := t.TempDir()
	ca := testpki.NewCA(t, "delaybridge test CA")
	srv := ca.Server(t, "redis")
	cli := ca.Client(t, "delaybridge")
	return pki{
		CA:         testpki.WriteCert(t, dir, "ca.crt", ca.DER),
		ServerCert: testpki.WriteCert(t, dir, "redis.crt", srv.DER),
		ServerKey:  testpki.WriteKey(t, dir, "redis.key", srv.Key),
		ClientCert: testpki.WriteCert(t, dir, "client.crt", cli.DER),
		ClientKey:  testpki.WriteKey(t, dir, "client.key", cli.Key),
	}
}

// tlsRedis is a redis-server of the test's own that speaks only TLS and
// requires a client certificate.
type tlsRedis struct {
	Addr  string
	pki   pki
	Admin *redis.Client // as user admin, with every permission
}

// Admin credentials of the private Redis; the default user is disabled.
const adminPassword = "admin-Kx81"

// startTLSRedis runs redis-server on a free loopback port with TLS only
// (--port 0), client certificates required, and an admin user; the default
// user is switched off, so every client must log in.
func startTLSRedis(t *testing.T, p pki) *tlsRedis {
	t.Helper()
	r := &tlsRedis{pki: p}
	srv := e2etest.StartRedisServer(t, "redis", redis.Options{TLSConfig: r.clientTLS(t)}, func(port int, dir string) []string {
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
	ctx := t.Context()
	admin := redis.NewClient(&redis.Options{Addr: r.Addr, TLSConfig: r.clientTLS(t)})
	defer admin.Close()
	for _, args := range [][]any{
		{"ACL", "SETUSER", "admin", "on", ">" + adminPassword, "~*", "&*", "+@all"},
		{"ACL", "SETUSER", "default", "off"},
	} {
		if err := admin.Do(ctx, args...).Err(); err != nil {
			t.Fatalf("%v: %v", args[:3], err)
		}
	}
	r.Admin = redis.NewClient(&redis.Options{Addr: r.Addr, TLSConfig: r.clientTLS(t), Username: "admin", Password: adminPassword})
	t.Cleanup(func() { _ = r.Admin.Close() })
	if err := r.Admin.Ping(ctx).Err(); err != nil {
		t.Fatalf("log in as admin: %v", err)
	}
	return r
}

// clientTLS trusts the test CA and presents the client certificate.
func (r *tlsRedis) clientTLS(t *testing.T) *tls.Config {
	t.Helper()
	ca, err := os.ReadFile(r.pki.CA)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	cert, err := tls.LoadX509KeyPair(r.pki.ClientCert, r.pki.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
}
