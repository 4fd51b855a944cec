package config

import (
	"strings"
	"testing"
)

// TestURLWithoutPasswordIsShown: only the password part of a URL is a
// secret. A URL without one, even a mistyped one, is shown as given, so the
// error that refuses it can be read; a password anywhere is still hidden.
func TestURLWithoutPasswordIsShown(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"REDIS_URL", "redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"},
		{"REDIS_URL", "localhost:6379", "localhost:6379"},
		{"REDIS_URL", "redis://h:x/0", "redis://h:x/0"},
		{"AMQP_URL", "amqp//rabbit:5672/", "amqp//rabbit:5672/"},
		{"REDIS_URL", "redis://user:pw@h:6379/0", "redis://user:xxxxx@h:6379/0"},
		{"REDIS_URL", "redis://u:pw@h:x/0", "xxxxx"},
		{"REDIS_URL", "redis://h/0?password=pw", "redis://h/0?password=xxxxx"},
		{"REDIS_URL", "redis://h:x/0?password=pw", "xxxxx"},
		{"AMQP_URL", "Sup3rSecret", "xxxxx"},
		{"AMQP_URL", "pass:word", "xxxxx"},
		{"REDIS_PASSWORD", "plain", "xxxxx"},
		{"KAFKA_SASL_PASSWORD", "localhost", "xxxxx"},
	} {
		if got := redactVar(tc.name, tc.in); got != tc.want {
			t.Errorf("redactVar(%s, %q) = %q, want %q", tc.name, tc.in, got, tc.want)
		}
	}
}

// TestBadRedisURLErrorShowsTheURL: the error about a mistyped URL without a
// password quotes it.
func TestBadRedisURLErrorShowsTheURL(t *testing.T) {
	t.Setenv(Prefix+"_REDIS_URL", "localhost:6379")
	t.Setenv(Prefix+"_TOPICS", "orders")
	_, err := Load()
	if err == nil || !strings.Contains(err.Error(), `"localhost:6379"`) {
		t.Errorf("Load: %v, want the URL quoted", err)
	}
}
