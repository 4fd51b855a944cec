package config

import (
	"fmt"
	"net/url"
	"os"
	"reflect"
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
		b, err := os.ReadFile(path)
		if err != nil {
			p.errs = append(p.errs, &FieldError{Var: fileVar, Value: path, Problem: fmt.Sprintf("cannot be read: %v", err)})
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
			lk := strings.ToLower(k)
			if strings.Contains(lk, "pass") || strings.Contains(lk, "secret") || strings.Contains(lk, "token") {
				q.Set(k, redactedText)
			}
		}
		u.RawQuery = q.Encode()
	}
	u.Fragment, u.RawFragment = "", ""
	return u.String()
}

// Redacted returns a URL with its password replaced (or any other secret
// value replaced entirely), for logs.
func Redacted(raw string) string { return redact(raw) }
