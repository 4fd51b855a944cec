package chaos

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/internal/testpki"
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
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redis-server (with TLS support) is required for this test: %v", err)
	}
	var lastErr error
	for range 5 {
		port, err := freePort()
		if err != nil {
			t.Fatalf("free port: %v", err)
		}
		r, err := runTLSRedis(t, p, port)
		if err == nil {
			return r
		}
		lastErr = err // most likely the port was taken meanwhile
	}
	t.Fatalf("start redis-server with TLS: %v", lastErr)
	return nil
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func runTLSRedis(t *testing.T, p pki, port int) (*tlsRedis, error) {
	dir := t.TempDir()
	logFile := filepath.Join(dir, "redis.log")
	cmd := exec.Command("redis-server",
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
		"--logfile", logFile,
	)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start redis-server: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopServer := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}

	r := &tlsRedis{Addr: fmt.Sprintf("127.0.0.1:%d", port), pki: p}
	admin := redis.NewClient(&redis.Options{Addr: r.Addr, TLSConfig: r.clientTLS(t), MaxRetries: -1})
	ctx := context.Background()
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := admin.Ping(ctx).Err()
		if err == nil {
			break
		}
		select {
		case werr := <-exited:
			admin.Close()
			log, _ := os.ReadFile(logFile)
			return nil, fmt.Errorf("redis-server exited (%v): %s", werr, log)
		default:
		}
		if time.Now().After(deadline) {
			admin.Close()
			stopServer()
			return nil, fmt.Errorf("redis-server with TLS on %s does not answer: %w", r.Addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, args := range [][]any{
		{"ACL", "SETUSER", "admin", "on", ">" + adminPassword, "~*", "&*", "+@all"},
		{"ACL", "SETUSER", "default", "off"},
	} {
		if err := admin.Do(ctx, args...).Err(); err != nil {
			admin.Close()
			stopServer()
			return nil, fmt.Errorf("%v: %w", args[:3], err)
		}
	}
	admin.Close()
	r.Admin = redis.NewClient(&redis.Options{Addr: r.Addr, TLSConfig: r.clientTLS(t), Username: "admin", Password: adminPassword})
	if err := r.Admin.Ping(ctx).Err(); err != nil {
		stopServer()
		return nil, fmt.Errorf("log in as admin: %w", err)
	}
	t.Cleanup(func() {
		r.Admin.Close()
		stopServer()
	})
	return r, nil
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
