package config

import (
	"errors"
	"testing"
)

func TestLoadCLIAllowsNoTopicsAndLoadDoesNot(t *testing.T) {
	setEnv(t, map[string]string{"REDIS_URL": "redis://127.0.0.1:6379/0"})
	c, err := LoadCLI()
	if err != nil {
		t.Fatalf("LoadCLI without topics: %v", err)
	}
	if len(c.Topics) != 0 || c.KeyPrefix != "dq" {
		t.Errorf("LoadCLI = %d topics, prefix %q; want none, dq", len(c.Topics), c.KeyPrefix)
	}
	_, err = Load()
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Var != "DELAYBRIDGE_TOPICS" {
		t.Errorf("Load without topics = %v, want a DELAYBRIDGE_TOPICS error", err)
	}
}

func TestLoadCLIChecksTopicsThatAreSet(t *testing.T) {
	setEnv(t, map[string]string{"TOPICS": "orders", "TOPIC_ORDERS_SLOTS": "3"})
	c, err := LoadCLI()
	if err == nil {
		t.Fatalf("LoadCLI with SLOTS=3 = %+v, want an error", c.Topics)
	}
	setEnv(t, map[string]string{"TOPICS": "orders", "TOPIC_ORDERS_SLOTS": "4"})
	if c, err = LoadCLI(); err != nil || len(c.Topics) != 1 || c.Topics[0].Slots != 4 {
		t.Errorf("LoadCLI = %+v, %v", c.Topics, err)
	}
}
