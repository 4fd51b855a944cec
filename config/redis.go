package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"time"

	"github.com/redis/go-redis/v9"
)

// Timeouts of every Redis connection unless the URL's query sets its own
// (?dial_timeout=…): short enough that a dead node is noticed within a scan
// loop, long enough for a loaded Redis to answer a claim of a full batch.
const (
	redisDialTimeout  = 5 * time.Second
	redisReadTimeout  = 3 * time.Second
	redisWriteTimeout = 3 * time.Second
)

// Options translates r into go-redis options (redisclient adds the dialer
// and connects): a single Redis from URL, Redis Cluster
// (Addrs, Cluster) or Sentinel (Addrs, SentinelMaster). The URL always gives
// the database, credentials, TLS (rediss://) and go-redis's query options;
// Username and Password, when set, override the URL's. Sentinels
// authenticate with SentinelUsername and SentinelPassword alone: they are
// separate servers, often with a password of their own.
//
// With Addrs the URL may be empty: it then gives no credentials, database 0
// and no TLS but what TLS asks for.
func (r Redis) Options() (*redis.UniversalOptions, error) {
	raw := r.URL
	if raw == "" && len(r.Addrs) > 0 {
		raw = "redis://"
	}
	u, err := redis.ParseURL(raw)
	if err != nil {
		return nil, fmt.Errorf("parse Redis URL %s: %w", redactURL(r.URL), redactURLError(err))
	}
	o := urlOptions(u)
	if r.Username != "" {
		o.Username = r.Username
	}
	if r.Password != "" {
		o.Password = r.Password
	}
	serverName, err := r.topology(o, u)
	if err != nil {
		return nil, err
	}
	t := r.TLS
	t.Enabled = t.Enabled || u.TLSConfig != nil
	if o.TLSConfig, err = t.Config(serverName); err != nil {
		return nil, fmt.Errorf("redis TLS: %w", err)
	}
	if o.TLSConfig != nil && u.TLSConfig != nil && u.TLSConfig.InsecureSkipVerify {
		o.TLSConfig.InsecureSkipVerify = true // ?skip_verify=true in the URL
	}
	return o, nil
}

// urlOptions are the options a parsed URL gives, with our timeouts where it
// sets none.
func urlOptions(u *redis.Options) *redis.UniversalOptions {
	return &redis.UniversalOptions{
		DB:              u.DB,
		Username:        u.Username,
		Password:        u.Password,
		ClientName:      u.ClientName,
		Protocol:        u.Protocol,
		MaxRetries:      u.MaxRetries,
		MinRetryBackoff: u.MinRetryBackoff,
		MaxRetryBackoff: u.MaxRetryBackoff,
		DialTimeout:     or(u.DialTimeout, redisDialTimeout),
		ReadTimeout:     or(u.ReadTimeout, redisReadTimeout),
		WriteTimeout:    or(u.WriteTimeout, redisWriteTimeout),
		PoolFIFO:        u.PoolFIFO,
		PoolSize:        u.PoolSize, // 0: go-redis's default, 10 per GOMAXPROCS
		PoolTimeout:     u.PoolTimeout,
		MinIdleConns:    u.MinIdleConns,
		MaxIdleConns:    u.MaxIdleConns,
		MaxActiveConns:  u.MaxActiveConns,
		ConnMaxIdleTime: u.ConnMaxIdleTime,
		ConnMaxLifetime: u.ConnMaxLifetime,
		// Deadlines of the daemon's contexts (heartbeats, claims during
		// shutdown) must hold on a stalled connection too.
		ContextTimeoutEnabled: true,
	}
}

// topology sets the addresses of a single Redis, a Cluster or a Sentinel
// deployment and returns the TLS server name to check. It stays empty for
// Cluster and Sentinel: crypto/tls then checks each node's certificate
// against the host it dialled.
func (r Redis) topology(o *redis.UniversalOptions, u *redis.Options) (serverName string, err error) {
	switch {
	case r.SentinelMaster == "" && (r.SentinelUsername != "" || r.SentinelPassword != ""):
		return "", errors.New("redis: SentinelUsername and SentinelPassword need SentinelMaster")
	case r.Cluster && r.SentinelMaster != "":
		return "", errors.New("redis: Cluster and Sentinel cannot both be set")
	case r.Cluster:
		if len(r.Addrs) == 0 {
			return "", errors.New("redis: Cluster needs Addrs")
		}
		if u.DB != 0 {
			return "", fmt.Errorf("redis: Cluster has only database 0, the URL selects %d", u.DB)
		}
		o.Addrs = r.Addrs
		// One address (a configuration endpoint) would otherwise make
		// NewUniversalClient build a single-node client.
		o.IsClusterMode = true
	case r.SentinelMaster != "":
		if len(r.Addrs) == 0 {
			return "", errors.New("redis: Sentinel needs Addrs")
		}
		o.Addrs = r.Addrs
		o.MasterName = r.SentinelMaster
		o.SentinelUsername = r.SentinelUsername
		o.SentinelPassword = r.SentinelPassword
	case len(r.Addrs) > 0:
		return "", errors.New("redis: Addrs need Cluster or SentinelMaster")
	default:
		o.Addrs = []string{u.Addr}
		serverName, _, _ = net.SplitHostPort(u.Addr)
	}
	return serverName, nil
}

func or(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// redactURLError keeps a *url.Error (it quotes the whole URL, password
// included) from reaching logs.
func redactURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return &url.Error{Op: ue.Op, URL: redactURL(ue.URL), Err: ue.Err}
	}
	return err
}
