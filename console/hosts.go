package console

import (
	"net"
	"slices"
	"strings"
)

// The console answers only requests whose Host header names it. A page on
// any web site can make the operator's browser fetch http://evil.example:8081/
// after pointing evil.example at 127.0.0.1 (DNS rebinding): the browser
// treats the answer as evil.example's own and lets the page read it. The
// Host header still says evil.example, so refusing unknown hosts stops it.

// hostSet is the allowed Host values: a name with a port matches only that
// port, a name without one any port.
type hostSet map[string]bool

func newHostSet(hosts []string) hostSet {
	if len(hosts) == 0 {
		hosts = []string{"localhost", "127.0.0.1", "[::1]"}
	}
	set := hostSet{}
	for _, h := range hosts {
		name, port := splitHost(h)
		set[name+":"+port] = true
	}
	return set
}

// allows reports whether hostport (a Host header, or an Origin's host) is
// one the console answers to.
func (s hostSet) allows(hostport string) bool {
	name, port := splitHost(hostport)
	return name != "" && (s[name+":"+port] || s[name+":"])
}

// splitHost splits "name[:port]" (an IPv6 name in brackets) and lower-cases
// the name without a final dot.
func splitHost(h string) (name, port string) {
	h = strings.ToLower(strings.TrimSpace(h))
	name = h
	if strings.HasPrefix(h, "[") {
		if i := strings.IndexByte(h, ']'); i > 0 {
			name = h[:i+1]
			port, _ = strings.CutPrefix(h[i+1:], ":")
		}
	} else if i := strings.LastIndexByte(h, ':'); i >= 0 {
		name, port = h[:i], h[i+1:]
	}
	return strings.TrimSuffix(name, "."), port
}

// DefaultHosts are the Host values a console listening on addr answers when
// none are configured: localhost, 127.0.0.1 and [::1], and the listen host
// when it names one (not all interfaces), each with the port it listens on.
func DefaultHosts(addr net.Addr, configured string) []string {
	_, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return nil
	}
	names := []string{"localhost", "127.0.0.1", "[::1]"}
	if host, _, err := net.SplitHostPort(configured); err == nil && host != "" {
		if ip := net.ParseIP(host); ip == nil || !ip.IsUnspecified() {
			if ip != nil && ip.To4() == nil {
				host = "[" + host + "]"
			}
			if !slices.Contains(names, strings.ToLower(host)) {
				names = append(names, host)
			}
		}
	}
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = n + ":" + port
	}
	return out
}
