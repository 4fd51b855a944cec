package config

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"
)

// redisView is the part of UniversalOptions that Options decides.
type redisView struct {
	Addrs                                  []string
	DB                                     int
	Username, Password, MasterName         string
	SentinelUsername, SentinelPassword     string
	IsClusterMode                          bool
	DialTimeout, ReadTimeout, WriteTimeout time.Duration
	PoolSize                               int
	TLS                                    bool
	ServerName                             string
	Insecure, RootCAs                      bool
	ClientCerts                            int
}

func viewOf(o *redis.UniversalOptions) redisView {
	v := redisView{
		Addrs: o.Addrs, DB: o.DB, Username: o.Username, Password: o.Password, MasterName: o.MasterName,
		SentinelUsername: o.SentinelUsername, SentinelPassword: o.SentinelPassword,
		IsClusterMode: o.IsClusterMode, DialTimeout: o.DialTimeout, ReadTimeout: o.ReadTimeout,
		WriteTimeout: o.WriteTimeout, PoolSize: o.PoolSize, TLS: o.TLSConfig != nil,
	}
	if o.TLSConfig != nil {
		v.ServerName = o.TLSConfig.ServerName
		v.Insecure = o.TLSConfig.InsecureSkipVerify
		v.RootCAs = o.TLSConfig.RootCAs != nil
		v.ClientCerts = len(o.TLSConfig.Certificates)
	}
	return v
}

func TestRedisOptions(t *testing.T) {
	pki := newTestPKI(t)
	timeouts := func(v redisView) redisView {
		v.DialTimeout, v.ReadTimeout, v.WriteTimeout = 5*time.Second, 3*time.Second, 3*time.Second
		return v
	}
	tests := []struct {
		name  string
		redis Redis
		want  redisView
	}{{
		name:  "standalone from the URL",
		redis: Redis{URL: "redis://app:url-pw@redis.internal:6380/3"},
		want:  timeouts(redisView{Addrs: []string{"redis.internal:6380"}, DB: 3, Username: "app", Password: "url-pw"}),
	}, {
		name:  "variables override the URL's credentials",
		redis: Redis{URL: "redis://app:url-pw@redis/0", Username: "acl", Password: "var-pw"},
		want:  timeouts(redisView{Addrs: []string{"redis:6379"}, Username: "acl", Password: "var-pw"}),
	}, {
		name:  "URL query options win over the defaults",
		redis: Redis{URL: "redis://redis/0?dial_timeout=10s&read_timeout=1s&pool_size=7"},
		want:  redisView{Addrs: []string{"redis:6379"}, DialTimeout: 10 * time.Second, ReadTimeout: time.Second, WriteTimeout: 3 * time.Second, PoolSize: 7},
	}, {
		name:  "cluster, even with one address",
		redis: Redis{URL: "redis://:pw@ignored:1", Addrs: []string{"cfg.cache.example:6379"}, Cluster: true},
		want:  timeouts(redisView{Addrs: []string{"cfg.cache.example:6379"}, Password: "pw", IsClusterMode: true}),
	}, {
		name:  "sentinel",
		redis: Redis{URL: "redis://:pw@ignored:1/2", Addrs: []string{"s1:26379", "s2:26379"}, SentinelMaster: "mymaster"},
		want:  timeouts(redisView{Addrs: []string{"s1:26379", "s2:26379"}, DB: 2, Password: "pw", MasterName: "mymaster"}),
	}, {
		name: "sentinels with credentials of their own, apart from the master's",
		redis: Redis{URL: "redis://app:url-pw@ignored:1/0", Addrs: []string{"s1:26379"}, SentinelMaster: "mymaster",
			SentinelUsername: "sentinel-user", SentinelPassword: "sentinel-pw", Password: "var-pw"},
		want: timeouts(redisView{Addrs: []string{"s1:26379"}, Username: "app", Password: "var-pw", MasterName: "mymaster",
			SentinelUsername: "sentinel-user", SentinelPassword: "sentinel-pw"}),
	}, {
		name:  "sentinel password alone, master without a password",
		redis: Redis{URL: "redis://ignored:1/0", Addrs: []string{"s1:26379"}, SentinelMaster: "mymaster", SentinelPassword: "sentinel-pw"},
		want:  timeouts(redisView{Addrs: []string{"s1:26379"}, MasterName: "mymaster", SentinelPassword: "sentinel-pw"}),
	}, {
		name:  "rediss enables TLS for the URL's host",
		redis: Redis{URL: "rediss://redis.test:6380/0"},
		want:  timeouts(redisView{Addrs: []string{"redis.test:6380"}, TLS: true, ServerName: "redis.test"}),
	}, {
		name:  "rediss with skip_verify",
		redis: Redis{URL: "rediss://redis.test/0?skip_verify=true"},
		want:  timeouts(redisView{Addrs: []string{"redis.test:6379"}, TLS: true, ServerName: "redis.test", Insecure: true}),
	}, {
		name:  "TLS files on a redis:// URL",
		redis: Redis{URL: "redis://redis.test/0", TLS: TLS{Enabled: true, CAFile: pki.CAFile, CertFile: pki.ClientCert, KeyFile: pki.ClientKey}},
		want:  timeouts(redisView{Addrs: []string{"redis.test:6379"}, TLS: true, ServerName: "redis.test", RootCAs: true, ClientCerts: 1}),
	}, {
		name:  "cluster TLS checks each node's own name",
		redis: Redis{URL: "rediss://x/0", Addrs: []string{"n1:7000", "n2:7000"}, Cluster: true, TLS: TLS{CAFile: pki.CAFile, InsecureSkipVerify: true}},
		want:  timeouts(redisView{Addrs: []string{"n1:7000", "n2:7000"}, IsClusterMode: true, TLS: true, Insecure: true, RootCAs: true}),
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := tt.redis.Options()
			if err != nil {
				t.Fatalf("Options: %v", err)
			}
			if diff := cmp.Diff(tt.want, viewOf(o)); diff != "" {
				t.Errorf("Options() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRedisOptionsErrors(t *testing.T) {
	tests := []struct {
		name  string
		redis Redis
		want  string
	}{
		{"bad URL, password hidden", Redis{URL: "redis://u:Sup3rSecret@h:x/0"}, "xxxxx"},
		{"cluster with a database", Redis{URL: "redis://h/1", Addrs: []string{"a:1"}, Cluster: true}, "only database 0"},
		{"addresses without a mode", Redis{URL: "redis://h/0", Addrs: []string{"a:1"}}, "Cluster or SentinelMaster"},
		{"sentinel password without sentinel, password hidden", Redis{URL: "redis://h/0", SentinelPassword: "Sup3rSecret"}, "need SentinelMaster"},
		{"sentinel user on a cluster", Redis{URL: "redis://h/0", Addrs: []string{"a:1"}, Cluster: true, SentinelUsername: "u"}, "need SentinelMaster"},
		{"unreadable CA", Redis{URL: "rediss://h/0", TLS: TLS{CAFile: "/nonexistent/ca.pem"}}, "/nonexistent/ca.pem"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.redis.Options()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Options() error = %v, want one saying %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "Sup3rSecret") {
				t.Errorf("error shows the password: %v", err)
			}
		})
	}
}
