package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestErrorsNeverShowSecrets(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name    string
		vars    map[string]string
		secrets []string // none may appear in the error
		named   string   // a variable the error must name
	}{
		{"redis URL with a bad port", map[string]string{"REDIS_URL": "redis://u:Sup3rSecret@host:99999/0"}, []string{"Sup3rSecret"}, "REDIS_URL"},
		{"redis URL with a bad database", map[string]string{"REDIS_URL": "redis://u:Sup3rSecret@host/abc"}, []string{"Sup3rSecret"}, "REDIS_URL"},
		{"redis URL not parsable", map[string]string{"REDIS_URL": "redis://u:Sup3r Secret@host:x/0"}, []string{"Sup3r", "Secret"}, "REDIS_URL"},
		{"password cut by '#'", map[string]string{"REDIS_URL": "redis://u:1234#Sup3rSecret@host/0"}, []string{"1234", "Sup3rSecret"}, "REDIS_URL"},
		{"password cut by '?'", map[string]string{"REDIS_URL": "redis://u:1234?Sup3rSecret@host/0"}, []string{"1234", "Sup3rSecret"}, "REDIS_URL"},
		{"password only in user info", map[string]string{"AMQP_URL": "ftp://Sup3rSecret@rabbit/"}, []string{"Sup3rSecret"}, "AMQP_URL"},
		{"AMQP URL with a wrong scheme", map[string]string{"AMQP_URL": "http://guest:Sup3rSecret@rabbit:5672/"}, []string{"Sup3rSecret"}, "AMQP_URL"},
		{"AMQP URL not a URL", map[string]string{"AMQP_URL": "Sup3rSecret"}, []string{"Sup3rSecret"}, "AMQP_URL"},
		{"redis password beside other problems", map[string]string{"REDIS_PASSWORD": "Sup3rSecret", "REDIS_URL": "redis://h:1/0?x=1", "BATCH_SIZE": "x"}, []string{"Sup3rSecret"}, "REDIS_URL"},
		{"sentinel password without a master", map[string]string{"REDIS_SENTINEL_PASSWORD": "Sup3rSecret"}, []string{"Sup3rSecret"}, "REDIS_SENTINEL_PASSWORD"},
		{"sentinel password from a file without a master", map[string]string{"REDIS_SENTINEL_PASSWORD_FILE": writeFile(t, dir, "sentinel", "Sup3rSecret\n")}, []string{"Sup3rSecret"}, "REDIS_SENTINEL_PASSWORD_FILE"},
		{"SASL password with a bad mechanism", map[string]string{"KAFKA_SASL_PASSWORD": "Sup3rSecret", "KAFKA_SASL_MECHANISM": "bogus"}, []string{"Sup3rSecret"}, "KAFKA_SASL_MECHANISM"},
		{"bad URL read from a file", map[string]string{"AMQP_URL_FILE": writeFile(t, dir, "amqp", "http://u:Sup3rSecret@rabbit/\n")}, []string{"Sup3rSecret"}, "AMQP_URL_FILE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vars := map[string]string{"TOPICS": "orders"}
			for k, v := range tt.vars {
				vars[k] = v
			}
			setEnv(t, vars)
			_, err := Load()
			if err == nil {
				t.Fatal("Load accepted it")
			}
			if !slices.Contains(varsNamed(t, err), Prefix+"_"+tt.named) {
				t.Errorf("error does not name %s_%s: %v", Prefix, tt.named, err)
			}
			text := err.Error() + fmt.Sprintf("%+v %#v", err, fieldErrors(t, err))
			for _, s := range tt.secrets {
				if strings.Contains(text, s) {
					t.Errorf("error shows the secret %q:\n%s", s, text)
				}
			}
		})
	}
}

func TestSecretsReadFromFiles(t *testing.T) {
	dir := t.TempDir()
	sentinel := map[string]string{"REDIS_ADDRS": "s1:26379", "REDIS_SENTINEL_MASTER": "mymaster"}
	tests := []struct {
		name    string
		content string
		get     func(Config) string
		vars    map[string]string // besides TOPICS and the file
	}{
		{"AMQP_URL", "amqp://u:from-file@rabbit:5672/\n", func(c Config) string { return c.AMQP.URL }, nil},
		{"REDIS_PASSWORD", "from-file\r\n", func(c Config) string { return c.Redis.Password }, nil},
		{"KAFKA_SASL_PASSWORD", "from file, spaces kept ", func(c Config) string { return c.Kafka.SASLPassword }, nil},
		{"REDIS_URL", "redis://:from-file@redis:6379/1", func(c Config) string { return c.Redis.URL }, nil},
		{"REDIS_SENTINEL_PASSWORD", "from-file\n", func(c Config) string { return c.Redis.SentinelPassword }, sentinel},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vars := map[string]string{"TOPICS": "orders", tt.name + "_FILE": writeFile(t, dir, tt.name, tt.content)}
			maps.Copy(vars, tt.vars)
			setEnv(t, vars)
			c, err := Load()
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if got, want := tt.get(c), strings.TrimRight(tt.content, "\r\n"); got != want {
				t.Errorf("%s = %q, want %q from the file", tt.name, got, want)
			}
		})
	}
}

func TestSecretFileProblemsNameTheFileVariable(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name    string
		vars    map[string]string
		want    string // the only variable named
		problem string
	}{
		{"missing file", map[string]string{"REDIS_PASSWORD_FILE": filepath.Join(dir, "nope")}, "REDIS_PASSWORD_FILE", "cannot be read"},
		{"directory", map[string]string{"KAFKA_SASL_PASSWORD_FILE": dir}, "KAFKA_SASL_PASSWORD_FILE", "cannot be read"},
		{"device that never ends", map[string]string{"REDIS_PASSWORD_FILE": "/dev/zero"}, "REDIS_PASSWORD_FILE", "not a regular file"},
		{"FIFO nobody writes", map[string]string{"REDIS_PASSWORD_FILE": fifo(t, dir)}, "REDIS_PASSWORD_FILE", "not a regular file (it is a FIFO)"},
		{"file over 64 KiB", map[string]string{"AMQP_URL_FILE": writeFile(t, dir, "big", strings.Repeat("x", 64<<10+1))}, "AMQP_URL_FILE", "larger than 65536 bytes"},
		{"CA file that never ends", map[string]string{"REDIS_CA_FILE": "/dev/zero"}, "REDIS_CA_FILE", "not a regular file"},
		{"both the variable and its file", map[string]string{"AMQP_URL": "amqp://rabbit/", "AMQP_URL_FILE": writeFile(t, dir, "amqp", "amqp://rabbit/")}, "AMQP_URL_FILE", "together with DELAYBRIDGE_AMQP_URL"},
		{"bad value in the file", map[string]string{"REDIS_URL_FILE": writeFile(t, dir, "redis", "mysql://db/")}, "REDIS_URL_FILE", "the file holds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.vars["TOPICS"] = "orders"
			setEnv(t, tt.vars)
			_, err := Load()
			if err == nil {
				t.Fatal("Load accepted it")
			}
			if diff := cmp.Diff([]string{Prefix + "_" + tt.want}, varsNamed(t, err)); diff != "" {
				t.Errorf("variables named (-want +got):\n%s\n%v", diff, err)
			}
			if p := fieldErrors(t, err)[0].Problem; !strings.Contains(p, tt.problem) {
				t.Errorf("problem %q does not say %q", p, tt.problem)
			}
		})
	}
}

func TestRedactedNeverShowsSecrets(t *testing.T) {
	secrets := []string{"redis-url-pw", "redis-pw", "sentinel-pw", "amqp-url-pw", "sasl-pw", "console-tok-0123456"}
	setEnv(t, map[string]string{
		"TOPICS":                  "orders,order-events",
		"REDIS_URL":               "redis://app:redis-url-pw@redis:6379/0",
		"REDIS_PASSWORD":          "redis-pw",
		"REDIS_ADDRS":             "s1:26379",
		"REDIS_SENTINEL_MASTER":   "mymaster",
		"REDIS_SENTINEL_USERNAME": "sentinel-user",
		"REDIS_SENTINEL_PASSWORD": "sentinel-pw",
		"AMQP_URL":                "amqp://app:amqp-url-pw@rabbit:5672/",
		"KAFKA_SASL_MECHANISM":    "plain",
		"KAFKA_SASL_USERNAME":     "app",
		"KAFKA_SASL_PASSWORD":     "sasl-pw",
		"CONSOLE_TOKEN":           "console-tok-0123456",
	})
	c, err := Load()
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	m := c.Redacted()

	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("starting", "config", c)
	dump, err := json.Marshal(m)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	for _, s := range secrets {
		for what, text := range map[string]string{"Redacted()": string(dump), "slog": logged.String()} {
			if strings.Contains(text, s) {
				t.Errorf("%s shows the secret %q:\n%s", what, s, text)
			}
		}
	}

	// Redacted still tells the operator where it connects and that the
	// secrets are set.
	for k, want := range map[string]string{
		"REDIS_URL":                "redis://app:xxxxx@redis:6379/0",
		"REDIS_PASSWORD":           "xxxxx",
		"REDIS_SENTINEL_PASSWORD":  "xxxxx",
		"REDIS_SENTINEL_USERNAME":  "sentinel-user",
		"KAFKA_SASL_PASSWORD":      "xxxxx",
		"CONSOLE_TOKEN":            "xxxxx",
		"AMQP_URL":                 "amqp://app:xxxxx@rabbit:5672/",
		"BATCH_SIZE":               "500",
		"TOPICS":                   "orders,order-events",
		"TOPIC_ORDER_EVENTS_SLOTS": "1",
	} {
		if got := m[Prefix+"_"+k]; got != want {
			t.Errorf("Redacted()[%s_%s] = %q, want %q", Prefix, k, got, want)
		}
	}
	if !strings.Contains(logged.String(), `"DELAYBRIDGE_REDIS_URL":"redis://app:xxxxx@redis:6379/0"`) {
		t.Errorf("slog output lacks the redacted Redis URL:\n%s", logged.String())
	}

	// Every variable is in the dump, so none is left out of the log.
	var want []string
	for f := range reflect.TypeFor[env]().Fields() {
		want = append(want, Prefix+"_"+f.Tag.Get("envconfig"))
	}
	for _, topic := range []string{"ORDERS", "ORDER_EVENTS"} {
		for f := range reflect.TypeFor[topicEnv]().Fields() {
			want = append(want, Prefix+"_TOPIC_"+topic+"_"+f.Tag.Get("envconfig"))
		}
	}
	slices.Sort(want)
	var got []string
	for k := range m {
		got = append(got, k)
	}
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Redacted() keys (-want +got):\n%s", diff)
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"":                                      "",
		"redis://u:pw@h:6379/0":                 "redis://u:xxxxx@h:6379/0",
		"redis://:pw@h/0":                       "redis://:xxxxx@h/0",
		"redis://h:6379/0":                      "redis://h:6379/0",
		"amqp://pw-as-user@h/":                  "amqp://xxxxx@h/",
		"amqp://u:1234#pw@h/":                   "xxxxx",
		"redis://h/0?password=pw&db=1":          "redis://h/0?db=1&password=xxxxx",
		"plain-secret":                          "xxxxx",
		"amqps://u:p%40ss@h:5671/v?heartbeat=5": "amqps://u:xxxxx@h:5671/v?heartbeat=5",
	} {
		if got := Redacted(in); got != want {
			t.Errorf("Redacted(%q) = %q, want %q", in, got, want)
		}
	}
}

// fifo makes a named pipe that nobody writes: opening it for reading would
// block for ever.
func fifo(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	return path
}
