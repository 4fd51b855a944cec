package config

import (
	"strings"
	"testing"
	"time"
)

func TestLoadRedisWait(t *testing.T) {
	setEnv(t, map[string]string{"TOPICS": "orders", "REDIS_WAIT_REPLICAS": "2", "REDIS_WAIT_TIMEOUT": "250ms", "REDIS_WAIT_AOF": "true"})
	c, err := Load()
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if want := (RedisWait{Replicas: 2, Timeout: 250 * time.Millisecond, AOF: true}); c.RedisWait != want {
		t.Fatalf("RedisWait = %+v, want %+v", c.RedisWait, want)
	}
	if d := c.RedisWait.Durability(); d.Replicas != 2 || d.Timeout != 250*time.Millisecond || !d.AOF {
		t.Errorf("Durability = %+v", d)
	}
	if got := c.Redacted()["DELAYBRIDGE_REDIS_WAIT_REPLICAS"]; got != "2" {
		t.Errorf("Redacted REDIS_WAIT_REPLICAS = %q", got)
	}
}

func TestLoadRefusesBadRedisWait(t *testing.T) {
	for name, vars := range map[string]map[string]string{
		"DELAYBRIDGE_REDIS_WAIT_REPLICAS": {"REDIS_WAIT_REPLICAS": "-1"},
		"DELAYBRIDGE_REDIS_WAIT_TIMEOUT":  {"REDIS_WAIT_TIMEOUT": "5s"},
		"DELAYBRIDGE_REDIS_WAIT_AOF":      {"REDIS_WAIT_AOF": "maybe"},
	} {
		vars["TOPICS"] = "orders"
		setEnv(t, vars)
		if _, err := Load(); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%v: err %v, want one naming %s", vars, err, name)
		}
	}
}
