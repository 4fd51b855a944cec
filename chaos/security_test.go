package chaos

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
	"github.com/delaybridge/delaybridge/queue"
)

// daemonCommands are the commands a daemon's Redis user needs, as
// docs/operations-security.md documents them (TestDocumentedACLIsTheTestedOne
// keeps the two equal): those it sends (PING, EVALSHA/EVAL, SUBSCRIBE) and
// those its Lua scripts call, which Redis checks against the caller's ACL
// too. HELLO and AUTH need no grant.
var daemonCommands = []string{
	"ping", "evalsha", "eval", "subscribe",
	"info", // INFO memory: a full Redis, a policy that evicts
	"time", "zadd", "zrem", "zrange", "zrangebyscore", "zremrangebyrank", "zremrangebyscore",
	"zscore", "zmscore", "zcard", "zcount", "hset", "hget", "hmget", "hdel", "hincrby", "hlen", "hscan",
	"hkeys", "hrandfield", // the stats script's retrying count (bounded: HKEYS only of a small hash)
	"scan",                                     // the search for stranded slots
	"exists",                                   // ack: does the slot still have the old :ids hash
	"zrevrange", "zrevrangebyscore", "pexpire", // the rate limiter; the latest due time
	"zscan",                                    // a lookup by id's bounded fallback (an index entry of the previous version, many leases)
	"hgetall",                                  // the heartbeat's read of the topics each replica forwards (small: a field per replica)
	"zincrby", "zrangebylex", "zremrangebylex", // fair share: a key's turn, a key's earliest messages, those taken
}

// daemonACL creates user with only the daemon's keys, channel and commands.
func daemonACL(user, password, prefix string) []any {
	args := []any{"ACL", "SETUSER", user, "reset", "on", ">" + password, "~" + prefix + ":*", "&" + prefix + ":wake", "-@all"}
	for _, c := range daemonCommands {
		args = append(args, "+"+c)
	}
	return args
}

// refusedByACL is how Redis refuses a command: NOPERM when the daemon sends
// it, this when one of its scripts calls it.
var refusedByACL = []string{"NOPERM", "can't run this command"}

func secret(t *testing.T) string {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "pw-" + hex.EncodeToString(b)
}

// A Redis of the test's own speaks only TLS, wants a client certificate and
// has an ACL user that may touch only the daemon's key prefix and run only
// the commands the daemon needs. The daemon delivers through it; with a
// wrong password, or without a client certificate, it fails clearly and
// never shows the password.
func TestRedisOverTLSWithAPrefixACLUser(t *testing.T) {
	t.Parallel()
	rep := report(t, "6 redis-tls-acl-user")
	p := e2etest.NewPKI(t)
	r := e2etest.StartTLSRedis(t, p)
	name := e2etest.Unique(t)
	password := secret(t)
	ctx := context.Background()
	if err := r.Admin.Do(ctx, daemonACL("delaybridge", password, name)...).Err(); err != nil {
		t.Fatalf("create the daemon's ACL user: %v", err)
	}
	mq := e2etest.NewRabbit(t, name, nil)
	mq.Consume(t)
	b := &bridge{
		t: t, name: name, rdb: r.Admin, mq: mq,
		topic: queue.Topic{Name: topicName, Prefix: name, Slots: 2},
	}
	pwFile := filepath.Join(t.TempDir(), "redis-password")
	if err := os.WriteFile(pwFile, []byte(password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := map[string]string{
		"DELAYBRIDGE_REDIS_URL":                "rediss://" + r.Addr + "/0",
		"DELAYBRIDGE_REDIS_CA_FILE":            p.CA,
		"DELAYBRIDGE_REDIS_CERT_FILE":          p.ClientCert,
		"DELAYBRIDGE_REDIS_KEY_FILE":           p.ClientKey,
		"DELAYBRIDGE_AMQP_URL":                 e2etest.AMQPURL(),
		"DELAYBRIDGE_KEY_PREFIX":               name,
		"DELAYBRIDGE_TOPICS":                   topicName,
		"DELAYBRIDGE_TOPIC_ORDERS_SLOTS":       "2",
		"DELAYBRIDGE_TOPIC_ORDERS_EXCHANGE":    mq.Exchange,
		"DELAYBRIDGE_TOPIC_ORDERS_ROUTING_KEY": mq.Queue,
	}
	with := func(kv ...string) map[string]string {
		vars := map[string]string{}
		for k, v := range base {
			vars[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			vars[kv[i]] = kv[i+1]
		}
		return vars
	}

	t.Run("the user is limited to the prefix", func(t *testing.T) {
		u := redis.NewClient(&redis.Options{Addr: r.Addr, TLSConfig: r.ClientTLS(t), Username: "delaybridge", Password: password})
		defer u.Close()
		if err := u.Ping(ctx).Err(); err != nil {
			t.Fatalf("ping as the daemon's user: %v", err)
		}
		for _, args := range [][]any{
			{"ZADD", "elsewhere:{orders:0}", "1", "x"}, // another prefix
			{"GET", name + ":replicas"},                // a command it does not need
			{"KEYS", "*"},
			{"FLUSHALL"},
		} {
			err := u.Do(ctx, args...).Err()
			if err == nil || !strings.Contains(err.Error(), "NOPERM") {
				t.Errorf("%v as the daemon's user: %v, want NOPERM", args, err)
			}
		}
	})

	t.Run("delivers end to end", func(t *testing.T) {
		vars := with("DELAYBRIDGE_REDIS_USERNAME", "delaybridge", "DELAYBRIDGE_REDIS_PASSWORD_FILE", pwFile)
		out, code := check(t, vars)
		if code != 0 {
			t.Errorf("delaybridge check: exit %d, want 0:\n%s", code, out)
		}
		noSecret(t, "delaybridge check", out, password)

		const n = 500
		plan := e2etest.NewPlan(n, time.Now().Add(2*time.Second), 3*time.Second)
		plan.Schedule(t, r.Admin, b.topic, e2etest.RawMember, nil)
		d := e2etest.Start(t, binary, vars)
		b.settle(plan, mq.Deliveries, false, 60*time.Second)
		code, body, err := e2etest.Get(ctx, d.Addr(), "/readyz")
		if err != nil || code != http.StatusOK {
			t.Errorf("/readyz: %d %q %v, want 200", code, body, err)
		}
		stop(t, d)
		noSecret(t, "daemon log", d.Log(), password)
		for _, refused := range refusedByACL {
			if i := strings.Index(d.Log(), refused); i >= 0 {
				t.Errorf("the daemon needs a command the documented ACL does not grant: find it, "+
					"then add it to daemonCommands and to docs/operations-security.md:\n%s", d.Log()[max(0, i-300):min(len(d.Log()), i+200)])
				break
			}
		}
		o := plan.Count(mq.Deliveries(), nil)
		rep.count(t, o, "rediss:// with CA and client certificate; ACL user limited to the prefix and "+
			"the daemon's commands; password from a _FILE; wrong password and missing client certificate fail clearly")
		if o.Duplicates > 0 {
			t.Errorf("%d duplicates without any fault", o.Duplicates)
		}
		b.expectDrained()
	})

	t.Run("wrong password fails clearly and stays secret", func(t *testing.T) {
		wrong := secret(t)
		vars := with("DELAYBRIDGE_REDIS_URL", "rediss://delaybridge:"+wrong+"@"+r.Addr+"/0")
		out, code := check(t, vars)
		if code != 1 {
			t.Errorf("delaybridge check: exit %d, want 1:\n%s", code, out)
		}
		if !strings.Contains(out, "redis: FAILED") || !strings.Contains(out, "WRONGPASS") {
			t.Errorf("delaybridge check does not say Redis refused the password:\n%s", out)
		}
		noSecret(t, "delaybridge check", out, wrong, password)

		d := e2etest.Start(t, binary, vars)
		var body string
		e2etest.WaitFor(t, 20*time.Second, "/readyz 503 naming the refusal", func() bool {
			var code int
			code, body, _ = e2etest.Get(ctx, d.Addr(), "/readyz")
			return code == http.StatusServiceUnavailable && strings.Contains(body, "WRONGPASS")
		})
		e2etest.WaitFor(t, 20*time.Second, "the log to name the refusal", func() bool {
			return strings.Contains(d.Log(), "WRONGPASS")
		})
		// It cannot leave the replica set either, so it exits 1: fine, as
		// long as it exits.
		var exit *exec.ExitError
		if err := d.Stop(45 * time.Second); err != nil && !errors.As(err, &exit) {
			t.Errorf("daemon after SIGTERM: %v", err)
		}
		noSecret(t, "/readyz", body, wrong, password)
		noSecret(t, "daemon log", d.Log(), wrong, password)
	})

	t.Run("no client certificate fails clearly", func(t *testing.T) {
		vars := with("DELAYBRIDGE_REDIS_USERNAME", "delaybridge", "DELAYBRIDGE_REDIS_PASSWORD_FILE", pwFile)
		delete(vars, "DELAYBRIDGE_REDIS_CERT_FILE")
		delete(vars, "DELAYBRIDGE_REDIS_KEY_FILE")
		out, code := check(t, vars)
		if code != 1 {
			t.Errorf("delaybridge check: exit %d, want 1:\n%s", code, out)
		}
		if !strings.Contains(out, "redis: FAILED") || !strings.Contains(out, "certificate") {
			t.Errorf("delaybridge check does not say the TLS handshake failed for want of a certificate:\n%s", out)
		}
		noSecret(t, "delaybridge check", out, password)
	})
}

// check runs `delaybridge check` with vars and returns its output and exit
// code.
func check(t *testing.T, vars map[string]string) (string, int) {
	t.Helper()
	cmd := exec.Command(binary, "check")
	cmd.Env = e2etest.Env(vars)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatalf("delaybridge check: %v", err)
	}
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("delaybridge check did not end within 60s:\n%s", out.String())
	}
	var exit *exec.ExitError
	switch {
	case err == nil:
		return out.String(), 0
	case errors.As(err, &exit):
		return out.String(), exit.ExitCode()
	default:
		t.Fatalf("delaybridge check: %v", err)
		return "", -1
	}
}

// noSecret fails the test if text shows any of the secrets.
func noSecret(t *testing.T, where, text string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if strings.Contains(text, s) {
			t.Errorf("%s shows a password:\n%s", where, text)
		}
	}
}
