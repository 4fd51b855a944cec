// Package redisclient connects to Redis as the configuration describes: the
// go-redis options config.Redis translates, over connections that read and
// write with raw system calls (internal/rawio), TLS included.
package redisclient

import (
	"context"
	"crypto/tls"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/delaybridge/delaybridge/config"
	"github.com/delaybridge/delaybridge/internal/rawio"
)

// Options are r's go-redis options with the dialer every connection uses,
// and go-redis's maintenance notifications off (see NoMaintNotifications).
func Options(r config.Redis) (*redis.UniversalOptions, error) {
	o, err := r.Options()
	if err != nil {
		return nil, err
	}
	o.Dialer = dialer(o.DialTimeout, o.TLSConfig)
	o.MaintNotificationsConfig = NoMaintNotifications()
	return o, nil
}

// NoMaintNotifications turns off go-redis's maintenance notifications (a
// Redis Enterprise and Cloud handshake that open-source Redis and Valkey
// refuse). In its default auto mode every new connection tries the
// handshake, and the first refusal rewrites the mode in a configuration
// that a client's Pub/Sub connections share with its pool without a common
// lock: go-redis v9.23.0's data race, seen by the race detector in CI when
// the wake-up subscription and a pooled connection started together. The
// daemon does not use the notifications (a Redis that goes away is retried
// and failed over by its own rules), so no connection asks.
func NoMaintNotifications() *maintnotifications.Config {
	return &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
}

// New connects to Redis as r describes. The caller closes the client.
func New(r config.Redis) (redis.UniversalClient, error) {
	return newClient(r, nil)
}

// newClient connects to Redis as r describes, with tune's changes to the
// options (nil: none).
func newClient(r config.Redis, tune func(*redis.UniversalOptions)) (redis.UniversalClient, error) {
	o, err := Options(r)
	if err != nil {
		return nil, err
	}
	if tune != nil {
		tune(o)
	}
	return redis.NewUniversalClient(o), nil
}

// heartbeatPool is how many connections the heartbeat's client holds: one
// heartbeat waits for Redis at a time, and one abandoned past the TTL may
// still hold its connection.
const heartbeatPool = 2

// NewHeartbeat connects as New does, with a pool of its own of
// heartbeatPool connections, one kept open: a replica's heartbeat then
// never queues behind its claims and acks for one of New's connections.
// Under load that queue reached half a second on two cores, and a
// heartbeat held back past its TTL moves slots away and back. The caller
// closes the client.
func NewHeartbeat(r config.Redis) (redis.UniversalClient, error) {
	return newClient(r, func(o *redis.UniversalOptions) {
		o.PoolSize, o.MinIdleConns, o.MaxActiveConns = heartbeatPool, 1, heartbeatPool
	})
}

// dialer does what go-redis's own dialer does (TCP, then TLS when
// configured, checking the dialled host when no server name is set) over a
// connection that reads and writes with raw system calls (rawio), so a
// round trip to Redis does not wake the Go runtime's monitor thread.
func dialer(timeout time.Duration, tlsConfig *tls.Config) func(context.Context, string, string) (net.Conn, error) {
	dial := rawio.Dial(&net.Dialer{Timeout: timeout})
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil || tlsConfig == nil {
			return c, err
		}
		cfg := tlsConfig
		if cfg.ServerName == "" {
			cfg = cfg.Clone()
			cfg.ServerName, _, _ = net.SplitHostPort(addr)
		}
		tc := tls.Client(c, cfg)
		hctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		if err := tc.HandshakeContext(hctx); err != nil {
			_ = c.Close()
			return nil, err
		}
		return tc, nil
	}
}
