package config

import (
	"fmt"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"strings"
)

// redactedText replaces a secret, or the secret part of a URL.
const redactedText = "xxxxx"

// readFiles notes which variables are secret and fills every secret field
// whose NAME_FILE variable is set from that file (Kubernetes and Docker
// secrets are files). Setting both NAME and NAME_FILE is an error: neither
// would win silently.
func (p *parser) readFiles(spec any) {
	p.secrets = map[string]bool{}
	p.files = map[string]string{}
	v := reflect.ValueOf(spec).Elem()
	for i := 0; i < v.NumField(); i++ {
		f := v.Type().Field(i)
		if f.Tag.Get("secret") != "true" {
			continue
		}
		name := f.Tag.Get("envconfig")
		p.secrets[name] = true
		fileVar := Prefix + "_" + name + "_FILE"
		path, ok := os.LookupEnv(fileVar)
		if !ok || path == "" {
			continue
		}
		if _, set := os.LookupEnv(Prefix + "_" + name); set {
			p.errs = append(p.errs, &FieldError{Var: fileVar, Value: path,
				Problem: fmt.Sprintf("cannot be set together with %s_%s: set one of them", Prefix, name)})
			continue
		}
		b, err := readFile(path, maxSecretFile)
		if err != nil {
			p.errs = append(p.errs, &FieldError{Var: fileVar, Value: path, Problem: err.Error()})
			continue
		}
		// Editors and `echo` end files with a newline that is not part of
		// the secret.
		v.Field(i).SetString(strings.TrimRight(string(b), "\r\n"))
		p.files[name] = path
	}
}

// redact hides the secret parts of a URL (password, user info without a
// password — some write the password there — and query parameters that look
// like credentials), or the whole value of any other secret.
func redact(s string) string {
	if s == "" {
		return ""
	}
	u, err := url.Parse(strings.TrimSpace(s))
	// An '@' outside the user info means a password with an unescaped '#',
	// '?' or '/' broke the URL apart: parts of it may sit in the host or path.
	if err != nil || u.Scheme == "" || u.Host == "" || (u.User == nil && strings.Contains(s, "@")) {
		return redactedText
	}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), redactedText)
		} else {
			u.User = url.User(redactedText)
		}
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			if credentialLike(k) {
				q.Set(k, redactedText)
			}
		}
		u.RawQuery = q.Encode()
	}
	u.Fragment, u.RawFragment = "", ""
	return u.String()
}

// redactVar hides the secret in the value of variable name (without
// prefix): only the password part of a URL (…_URL), the whole value of any
// other secret.
func redactVar(name, value string) string {
	if strings.HasSuffix(name, "URL") {
		return redactURL(value)
	}
	return redact(value)
}

// redactURL hides the password of a URL. A URL without user info has no
// password: it is shown as given, even when it does not parse (a mistyped
// URL must be readable in the error that refuses it), but for query
// parameters that look like credentials. A value that looks like no URL at
// all (no "//", not host:port) may be a password pasted in the wrong
// variable: it is hidden.
func redactURL(s string) string {
	if strings.Contains(s, "@") || !(strings.Contains(s, "//") || hostPort.MatchString(s)) {
		return redact(s)
	}
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil {
		if credentialLike(s) {
			return redactedText
		}
		return s
	}
	if u.RawQuery == "" || !credentialLike(u.RawQuery) {
		return s
	}
	return redact(s)
}

// hostPort is the start of host:port written without a scheme.
var hostPort = regexp.MustCompile(`^\[?[A-Za-z0-9.:-]+\]?:[0-9]+(/|$)`)

func credentialLike(s string) bool {
	s = strings.ToLower(s)
	return strings.Contains(s, "pass") || strings.Contains(s, "secret") || strings.Contains(s, "token")
}

// Redacted returns a URL with its password replaced (or any other secret
// value replaced entirely), for logs.
func Redacted(raw string) string { return redact(raw) }
