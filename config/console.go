package config

import (
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// consoleHost is one entry of CONSOLE_HOSTS: a DNS name or IPv4 address, or
// an IPv6 address in brackets, then an optional port.
var consoleHost = regexp.MustCompile(`^([A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?\.?|\[[0-9A-Fa-f:.]+\])(:[0-9]{1,5})?$`)

// Console is the web console's settings (delaybridge console).
type Console struct {
	// Addr is the console's listen address.
	Addr string
	// Token unlocks the actions; empty makes the console read-only.
	Token string
	// SecureCookie marks the session cookie Secure even when the console
	// itself serves plain HTTP (a TLS-terminating proxy in front).
	SecureCookie bool
	// Hosts are the Host header values the console answers to; empty: the
	// console's defaults (loopback names and the listen host, its port).
	Hosts []string
	// ReadRequiresToken puts message bodies behind the token too.
	ReadRequiresToken bool
	// SessionTTL is how long a login lasts.
	SessionTTL time.Duration
	// MaxConns bounds the connections the console's listener holds open.
	MaxConns int
}

func (p *parser) console(e *env) Console {
	c := Console{Addr: e.ConsoleAddr, Token: e.ConsoleToken}
	if c.Token != "" && len(c.Token) < MinAPITokenLen {
		p.fail("CONSOLE_TOKEN", c.Token, fmt.Sprintf("is shorter than %d characters: a short token can be guessed (the API's tokens have the same minimum)", MinAPITokenLen))
	}
	if _, port, err := net.SplitHostPort(e.ConsoleAddr); err != nil {
		p.fail("CONSOLE_ADDR", e.ConsoleAddr, "must be host:port or :port (port 0 picks a free port)")
	} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		p.fail("CONSOLE_ADDR", e.ConsoleAddr, "port must be a number from 0 to 65535")
	}
	c.SecureCookie = p.bool("CONSOLE_SECURE_COOKIE", e.ConsoleSecureCookie)
	c.ReadRequiresToken = p.bool("CONSOLE_READ_REQUIRES_TOKEN", e.ConsoleReadRequiresToken)
	c.SessionTTL = p.duration("CONSOLE_SESSION_TTL", e.ConsoleSessionTTL, time.Minute, 720*time.Hour)
	c.MaxConns = p.intIn("CONSOLE_MAX_CONNS", e.ConsoleMaxConns, 1, 1_000_000)
	for _, h := range p.list("CONSOLE_HOSTS", e.ConsoleHosts) {
		if !consoleHost.MatchString(h) {
			p.fail("CONSOLE_HOSTS", e.ConsoleHosts, fmt.Sprintf("%q is not a host name or address, with an optional :port (an IPv6 address in brackets)", h))
			continue
		}
		c.Hosts = append(c.Hosts, h)
	}
	return c
}

// values are the console's variables, the token in clear (Redacted hides it).
func (c Console) values() map[string]string {
	return map[string]string{
		"CONSOLE_ADDR":                c.Addr,
		"CONSOLE_TOKEN":               c.Token,
		"CONSOLE_SECURE_COOKIE":       strconv.FormatBool(c.SecureCookie),
		"CONSOLE_HOSTS":               strings.Join(c.Hosts, ","),
		"CONSOLE_READ_REQUIRES_TOKEN": strconv.FormatBool(c.ReadRequiresToken),
		"CONSOLE_SESSION_TTL":         c.SessionTTL.String(),
		"CONSOLE_MAX_CONNS":           strconv.Itoa(c.MaxConns),
	}
}
