package redisclient

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/config"
)

func TestRedisClientKinds(t *testing.T) {
	tests := []struct {
		name  string
		redis config.Redis
		check func(redis.UniversalClient) bool
	}{
		{"standalone", config.Redis{URL: "redis://127.0.0.1:1/0"}, func(c redis.UniversalClient) bool { _, ok := c.(*redis.Client); return ok }},
		{"cluster", config.Redis{URL: "redis://h/0", Addrs: []string{"127.0.0.1:1"}, Cluster: true}, func(c redis.UniversalClient) bool { _, ok := c.(*redis.ClusterClient); return ok }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(tt.redis)
			if err != nil {
				t.Fatalf("Client: %v", err)
			}
			defer c.Close()
			if !tt.check(c) {
				t.Errorf("Client() is a %T", c)
			}
		})
	}
}

func TestRedisClientReachesRedis(t *testing.T) {
	url := os.Getenv("DELAYBRIDGE_TEST_REDIS_URL")
	if url == "" {
		url = "redis://127.0.0.1:6379/0"
	}
	c, err := New(config.Redis{URL: url})
	if err != nil {
		t.Fatalf("Client(%s): %v", config.Redacted(url), err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING Redis at %s (set DELAYBRIDGE_TEST_REDIS_URL): %v", config.Redacted(url), err)
	}
}
