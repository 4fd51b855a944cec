package config

import (
	"fmt"
	"net"
	"reflect"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// redisVars is the text of the variables of one Redis: the daemon's
// (REDIS_*) or the stream sink's (SINK_REDIS_*), read by one parser.
type redisVars struct {
	URL, Addrs, Cluster                                string
	SentinelMaster, SentinelUsername, SentinelPassword string
	Username, Password                                 string
	CAFile, CertFile, KeyFile, TLSInsecure             string
	// set is each variable whose value is not its default: its name after
	// the prefix, and its value.
	set [][2]string
}

// redisVars picks the variables pre+URL, pre+ADDRS, … out of e by their
// envconfig tags.
func (e *env) redisVars(pre string) redisVars {
	var r redisVars
	fields := map[string]*string{
		"URL": &r.URL, "ADDRS": &r.Addrs, "CLUSTER": &r.Cluster,
		"SENTINEL_MASTER": &r.SentinelMaster, "SENTINEL_USERNAME": &r.SentinelUsername, "SENTINEL_PASSWORD": &r.SentinelPassword,
		"USERNAME": &r.Username, "PASSWORD": &r.Password,
		"CA_FILE": &r.CAFile, "CERT_FILE": &r.CertFile, "KEY_FILE": &r.KeyFile, "TLS_INSECURE": &r.TLSInsecure,
	}
	v := reflect.ValueOf(e).Elem()
	for i := 0; i < v.NumField(); i++ {
		f := v.Type().Field(i)
		name, ok := strings.CutPrefix(f.Tag.Get("envconfig"), pre)
		dst, known := fields[name]
		if !ok || !known {
			continue
		}
		*dst = v.Field(i).String()
		if *dst != f.Tag.Get("default") {
			r.set = append(r.set, [2]string{name, *dst})
		}
	}
	return r
}

// redis parses the variables v of one Redis, named pre+URL, pre+ADDRS, …
// With ADDRS the URL may be empty: it would give only the database,
// credentials and TLS.
func (p *parser) redis(pre string, v redisVars) Redis {
	r := Redis{
		URL:              strings.TrimSpace(v.URL),
		Addrs:            p.list(pre+"ADDRS", v.Addrs),
		Cluster:          p.bool(pre+"CLUSTER", v.Cluster),
		SentinelMaster:   strings.TrimSpace(v.SentinelMaster),
		SentinelUsername: v.SentinelUsername,
		SentinelPassword: v.SentinelPassword,
		Username:         v.Username,
		Password:         v.Password,
		TLS: TLS{
			CAFile:             v.CAFile,
			CertFile:           v.CertFile,
			KeyFile:            v.KeyFile,
			InsecureSkipVerify: p.bool(pre+"TLS_INSECURE", v.TLSInsecure),
		},
	}
	if r.URL != "" || len(r.Addrs) == 0 {
		r.TLS.Enabled = p.redisURL(pre+"URL", v.URL, r.Cluster)
	}
	if r.TLS.CAFile != "" || r.TLS.CertFile != "" {
		r.TLS.Enabled = true
	}
	p.tlsFiles(pre, r.TLS)
	p.redisTopology(pre, v, r)
	return r
}

// redisURL checks the URL of a Redis and reports whether it asks for TLS.
func (p *parser) redisURL(name, raw string, cluster bool) (tls bool) {
	u, ok := p.url(name, raw, "redis", "rediss")
	if !ok {
		return false
	}
	// go-redis reads the database and its own query options from the URL.
	if o, err := redis.ParseURL(strings.TrimSpace(raw)); err != nil {
		p.fail(name, raw, strings.TrimPrefix(err.Error(), "redis: "))
	} else if cluster && o.DB != 0 {
		p.fail(name, raw, "Redis Cluster has only database 0: drop the /"+strconv.Itoa(o.DB)+" path")
	}
	return u.Scheme == "rediss"
}

// redisTopology checks that ADDRS, CLUSTER and the SENTINEL_ variables of
// r (parsed from v, named pre+…) describe one Redis, a Cluster or a
// Sentinel deployment.
func (p *parser) redisTopology(pre string, v redisVars, r Redis) {
	for _, a := range r.Addrs {
		if _, _, err := net.SplitHostPort(a); err != nil {
			p.fail(pre+"ADDRS", v.Addrs, fmt.Sprintf("%q is not host:port", a))
		}
	}
	switch {
	case r.Cluster && r.SentinelMaster != "":
		p.fail(pre+"CLUSTER", v.Cluster, "cannot be true together with "+Prefix+"_"+pre+"SENTINEL_MASTER")
	case (r.Cluster || r.SentinelMaster != "") && len(r.Addrs) == 0:
		p.fail(pre+"ADDRS", v.Addrs, "is required with Redis Cluster or Sentinel")
	case !r.Cluster && r.SentinelMaster == "" && len(r.Addrs) > 0:
		p.fail(pre+"ADDRS", v.Addrs, "needs "+Prefix+"_"+pre+"CLUSTER=true or "+Prefix+"_"+pre+"SENTINEL_MASTER; a single Redis is given by "+Prefix+"_"+pre+"URL")
	}
	// Sentinel credentials anywhere else would be ignored: a password meant
	// for sentinels must not look accepted while the daemon dials a node.
	if r.SentinelMaster == "" {
		for _, f := range [][2]string{{"SENTINEL_USERNAME", v.SentinelUsername}, {"SENTINEL_PASSWORD", v.SentinelPassword}} {
			if f[1] != "" {
				p.fail(pre+f[0], f[1], "applies only to sentinels: set "+Prefix+"_"+pre+"SENTINEL_MASTER and "+Prefix+"_"+pre+"ADDRS, or unset it")
			}
		}
	}
}
