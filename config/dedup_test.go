package config

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestDedupWindow: DEDUP_WINDOW is a duration (0 by default) that reaches
// the topic's queue.Topic, and Redacted shows it; a bad one, one over 720h
// or one on a raw topic is refused naming the variable.
func TestDedupWindow(t *testing.T) {
	setEnv(t, map[string]string{"TOPICS": "orders,plain", "TOPIC_ORDERS_FORMAT": "envelope", "TOPIC_ORDERS_DEDUP_WINDOW": "36h"})
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Topics[0].Queue("dq").DedupWindow; got != 36*time.Hour {
		t.Errorf("orders' window = %v; want 36h", got)
	}
	if got := c.Topics[1].DedupWindow; got != 0 {
		t.Errorf("plain's window = %v; want 0 (the default)", got)
	}
	if got := c.Redacted()[Prefix+"_TOPIC_ORDERS_DEDUP_WINDOW"]; got != "36h0m0s" {
		t.Errorf("Redacted shows %q", got)
	}
	for _, tt := range []struct{ name, format, window, problem string }{
		{"not a duration", "envelope", "a day", "duration"},
		{"negative", "envelope", "-1s", "at least"},
		{"over a month", "envelope", "721h", "at most"},
		{"on a raw topic", "raw", "1h", "FORMAT=envelope"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			setEnv(t, map[string]string{"TOPICS": "orders", "TOPIC_ORDERS_FORMAT": tt.format, "TOPIC_ORDERS_DEDUP_WINDOW": tt.window})
			_, err := Load()
			if err == nil {
				t.Fatal("Load accepted it")
			}
			if diff := cmp.Diff([]string{Prefix + "_TOPIC_ORDERS_DEDUP_WINDOW"}, varsNamed(t, err)); diff != "" {
				t.Errorf("variables named (-want +got):\n%s", diff)
			}
			if p := fieldErrors(t, err)[0].Problem; !strings.Contains(p, tt.problem) {
				t.Errorf("problem %q does not say %q", p, tt.problem)
			}
		})
	}
}

// TestFair: FAIR reaches the topic's queue.Topic and Redacted; on a raw
// topic, or not a boolean, it is refused naming the variable.
func TestFair(t *testing.T) {
	setEnv(t, map[string]string{"TOPICS": "orders,plain", "TOPIC_ORDERS_FORMAT": "envelope", "TOPIC_ORDERS_FAIR": "true"})
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if !c.Topics[0].Queue("dq").Fair || c.Topics[1].Fair {
		t.Errorf("fair = %v, %v; want true, false", c.Topics[0].Fair, c.Topics[1].Fair)
	}
	if got := c.Redacted()[Prefix+"_TOPIC_ORDERS_FAIR"]; got != "true" {
		t.Errorf("Redacted shows %q", got)
	}
	for _, tt := range []struct{ name, format, fair, problem string }{
		{"not a boolean", "envelope", "sometimes", ""},
		{"on a raw topic", "raw", "true", "FORMAT=envelope"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			setEnv(t, map[string]string{"TOPICS": "orders", "TOPIC_ORDERS_FORMAT": tt.format, "TOPIC_ORDERS_FAIR": tt.fair})
			_, err := Load()
			if err == nil {
				t.Fatal("Load accepted it")
			}
			if diff := cmp.Diff([]string{Prefix + "_TOPIC_ORDERS_FAIR"}, varsNamed(t, err)); diff != "" {
				t.Errorf("variables named (-want +got):\n%s", diff)
			}
			if p := fieldErrors(t, err)[0].Problem; !strings.Contains(p, tt.problem) {
				t.Errorf("problem %q does not say %q", p, tt.problem)
			}
		})
	}
}

// TestKeyRateLimitNeedsAFairTopicAndARate: KEY_RATE_LIMIT is refused, naming
// it, on a topic that is not fair and when it is not a rate.
func TestKeyRateLimitNeedsAFairTopicAndARate(t *testing.T) {
	for _, tt := range []struct{ name, fair, rate, problem string }{
		{"not fair", "false", "20", "FAIR=true"},
		{"not a number", "true", "fast", "positive decimal"},
		{"zero", "true", "0", "positive decimal"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			setEnv(t, map[string]string{"TOPICS": "orders", "TOPIC_ORDERS_FORMAT": "envelope", "TOPIC_ORDERS_FAIR": tt.fair, "TOPIC_ORDERS_KEY_RATE_LIMIT": tt.rate})
			_, err := Load()
			if err == nil {
				t.Fatal("Load accepted it")
			}
			if diff := cmp.Diff([]string{Prefix + "_TOPIC_ORDERS_KEY_RATE_LIMIT"}, varsNamed(t, err)); diff != "" {
				t.Errorf("variables named (-want +got):\n%s", diff)
			}
			if p := fieldErrors(t, err)[0].Problem; !strings.Contains(p, tt.problem) {
				t.Errorf("problem %q does not say %q", p, tt.problem)
			}
		})
	}
}
