package config

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// parser collects every problem instead of stopping at the first, so one run
// of the daemon tells the operator everything to fix.
type parser struct {
	errs []error
	// secrets are the names (without prefix) of variables redacted in errors.
	secrets map[string]bool
	// files maps the name of a secret read from its _FILE variant to the
	// file's path, so a bad value names the variable the operator set.
	files map[string]string
}

func (p *parser) fail(name, value, problem string) {
	if p.secrets[name] {
		value = redactVar(name, value)
	}
	if path, ok := p.files[name]; ok {
		problem = fmt.Sprintf("the file holds %q: %s", value, problem)
		name, value = name+"_FILE", path
	}
	p.errs = append(p.errs, &FieldError{Var: Prefix + "_" + name, Value: value, Problem: problem})
}

func (p *parser) intIn(name, s string, lo, hi int) int {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < lo || n > hi {
		p.fail(name, s, fmt.Sprintf("must be a whole number from %d to %d", lo, hi))
		return lo
	}
	return n
}

// duration parses a Go duration of at least lo and, when hi > 0, at most hi.
// It returns 0 for a bad value, which callers comparing durations skip.
func (p *parser) duration(name, s string, lo, hi time.Duration) time.Duration {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	switch {
	case err != nil:
		p.fail(name, s, "must be a duration such as 500ms, 30s or 5m")
	case d < lo:
		p.fail(name, s, fmt.Sprintf("must be at least %s", lo))
	case hi > 0 && d > hi:
		p.fail(name, s, fmt.Sprintf("must be at most %s", hi))
	default:
		return d
	}
	return 0
}

func (p *parser) bool(name, s string) bool {
	b, err := strconv.ParseBool(strings.TrimSpace(s))
	if err != nil {
		p.fail(name, s, "must be true or false")
	}
	return b
}

// oneOf matches s, trimmed and lower-cased, against allowed; the error shows
// the value as given.
func (p *parser) oneOf(name, s string, allowed ...string) string {
	v := strings.ToLower(strings.TrimSpace(s))
	for _, a := range allowed {
		if v == a {
			return v
		}
	}
	shown := make([]string, len(allowed))
	for i, a := range allowed {
		if a == "" {
			a = `"" (empty)`
		}
		shown[i] = a
	}
	p.fail(name, s, "must be one of: "+strings.Join(shown, ", "))
	return allowed[0]
}

func (p *parser) list(name, s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part != "" {
			out = append(out, part)
		}
	}
	if s != "" && len(out) == 0 {
		p.fail(name, s, "must be a comma list with at least one entry")
	}
	return out
}

// url parses s as an absolute URL with one of schemes, a host name and, if
// any, a port from 1 to 65535. url.Parse's own error is not shown: it quotes
// the whole URL, password included.
func (p *parser) url(name, s string, schemes ...string) (*url.URL, bool) {
	problem := fmt.Sprintf("must be a URL with scheme %s and a host", strings.Join(schemes, " or "))
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil {
		p.fail(name, s, "is not a URL: "+problem+"; write '#', '?', '/' and '@' in a user or password percent-encoded")
		return nil, false
	}
	ok := false
	for _, sc := range schemes {
		ok = ok || u.Scheme == sc
	}
	if !ok || u.Hostname() == "" {
		p.fail(name, s, problem)
		return nil, false
	}
	// A '#', '?' or '/' in a password cuts the URL short and leaves the rest
	// of the password in the fragment, query or path; go-redis and amqp091
	// would then dial the wrong host.
	if strings.Contains(s, "#") || (u.User == nil && strings.Contains(s, "@")) {
		p.fail(name, s, "has a '#', or an '@' outside its user info: write '#', '?', '/' and '@' in a user or password percent-encoded (%23, %3F, %2F, %40)")
		return nil, false
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			p.fail(name, s, "port must be a number from 1 to 65535")
			return nil, false
		}
	}
	return u, true
}
