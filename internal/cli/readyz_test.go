package cli

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/internal/testing/faultproxy"
	"github.com/delaybridge/delaybridge/internal/testing/redistest"
)

// Credentials the broker refuses (403 ACCESS_REFUSED: a wrong password or a
// user that does not exist) are named as such in the log and in /readyz, and
// a Redis outage at the same time does not hide them: /readyz lists every
// failing dependency.
func TestReadyzNamesRefusedCredentialsBesideARedisFailure(t *testing.T) {
	for _, c := range []struct{ name, userinfo string }{
		{"wrong password", "guest:wrong-password"},
		{"unknown user", "no-such-user-7f3a:whatever"},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts := redistest.Options(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			proxy, err := faultproxy.New(ctx, opts.Addr)
			if err != nil {
				t.Fatal(err)
			}
			defer proxy.Close()
			amqpTopicEnv(t, "")
			url := strings.Replace(redistest.URL(), opts.Addr, proxy.Addr(), 1)
			bad := strings.Replace(amqpURL(), "guest:guest", c.userinfo, 1)
			if url == redistest.URL() || bad == amqpURL() {
				t.Fatalf("cannot point %s at the proxy or spoil the credentials of %s", redistest.URL(), amqpURL())
			}
			t.Setenv("DELAYBRIDGE_REDIS_URL", url)
			t.Setenv("DELAYBRIDGE_AMQP_URL", bad)
			d := startDaemon(t)
			d.waitReadyz(20*time.Second, "503 naming the refused credentials", func(code int, body string) bool {
				return code == http.StatusServiceUnavailable && strings.Contains(body, "broker refused the credentials")
			})
			proxy.Cut()
			d.waitReadyz(20*time.Second, "503 naming Redis and the refused credentials", func(code int, body string) bool {
				return code == http.StatusServiceUnavailable && strings.Contains(body, "redis: ") &&
					strings.Contains(body, "sink of topic orders: broker refused the credentials")
			})
			_, body := d.readyz()
			// The destination watch asks every 5s: its first answer may
			// have come before the first refusal.
			for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) &&
				!strings.Contains(d.logs.String(), `"level":"ERROR","msg":"broker refused the credentials`); {
				time.Sleep(100 * time.Millisecond)
			}
			logs := d.logs.String()
			if strings.Contains(body+logs, "wrong-password") || strings.Contains(body+logs, ":whatever@") {
				t.Errorf("the password shows:\n%s\n%s", body, logs)
			}
			for _, want := range []string{`"level":"ERROR","msg":"broker refused the credentials`,
				`"level":"ERROR","msg":"amqp connect refused: broker refused the credentials`} {
				if !strings.Contains(logs, want) {
					t.Errorf("no log line %s:\n%s", want, logs)
				}
			}
			if strings.Contains(logs, "destination missing") {
				t.Errorf("refused credentials logged as a missing destination:\n%s", logs)
			}
			proxy.Restore()
			d.stop(30 * time.Second)
		})
	}
}
