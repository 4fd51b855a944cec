package main

import (
	"context"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestPrivateRedisServerAnswersAndLeavesNoFiles(t *testing.T) {
	srv, err := startRedis("auto", false)
	if err != nil {
		t.Fatal(err)
	}
	opt, err := redis.ParseURL(srv.url)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	if err := rdb.Ping(context.Background()).Err(); err != nil {
		t.Errorf("ping %s: %v", srv.url, err)
	}
	srv.stop()
	if _, err := os.Stat(srv.dir); !os.IsNotExist(err) {
		t.Errorf("%s left behind: %v", srv.dir, err)
	}
}
