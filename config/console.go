package config

import (
	"net"
	"strconv"
)

// Console is the web console's settings (delaybridge console).
type Console struct {
	// Addr is the console's listen address.
	Addr string
	// Token unlocks the actions; empty makes the console read-only.
	Token string
	// SecureCookie marks the session cookie Secure even when the console
	// itself serves plain HTTP (a TLS-terminating proxy in front).
	SecureCookie bool
}

func (p *parser) console(e *env) Console {
	c := Console{Addr: e.ConsoleAddr, Token: e.ConsoleToken}
	if _, port, err := net.SplitHostPort(e.ConsoleAddr); err != nil {
		p.fail("CONSOLE_ADDR", e.ConsoleAddr, "must be host:port or :port (port 0 picks a free port)")
	} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		p.fail("CONSOLE_ADDR", e.ConsoleAddr, "port must be a number from 0 to 65535")
	}
	c.SecureCookie = p.bool("CONSOLE_SECURE_COOKIE", e.ConsoleSecureCookie)
	return c
}

// values are the console's variables, the token in clear (Redacted hides it).
func (c Console) values() map[string]string {
	return map[string]string{
		"CONSOLE_ADDR":          c.Addr,
		"CONSOLE_TOKEN":         c.Token,
		"CONSOLE_SECURE_COOKIE": strconv.FormatBool(c.SecureCookie),
	}
}
