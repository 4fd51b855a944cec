package cli

import (
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/delaybridge/delaybridge/config"
)

// Under TLS 1.3 a Redis that requires a client certificate may be seen
// only as a reset connection (chaos 6 failed once on "write: connection
// reset by peer"): without a certificate of ours, check says what to set.
func TestTLSHintNamesTheClientCertificateWhenTheServerDropsTheConnection(t *testing.T) {
	reset := &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.ECONNRESET)}
	noCert := config.TLS{Enabled: true}
	withCert := config.TLS{Enabled: true, CertFile: "c.pem"}
	for _, c := range []struct {
		err  error
		tls  config.TLS
		hint bool
	}{
		{reset, noCert, true},
		{io.EOF, noCert, true},
		{reset, withCert, false},
		{reset, config.TLS{}, false},
		{errors.New("NOAUTH"), noCert, false},
	} {
		got := tlsHint(c.err, c.tls)
		if !strings.HasPrefix(got, c.err.Error()) || strings.Contains(got, "DELAYBRIDGE_REDIS_CERT_FILE") != c.hint {
			t.Errorf("tlsHint(%v, %+v) = %q, want the error with a hint: %v", c.err, c.tls, got, c.hint)
		}
	}
}
