package config

import (
	"fmt"
	"maps"
	"net"
	"os"
	"strconv"
	"strings"
	"unicode"

	"github.com/delaybridge/delaybridge/queue"
)

// API is the HTTP API's settings (DELAYBRIDGE_API_*).
type API struct {
	// Addr is the listen address; empty: `delaybridge run` serves no API.
	Addr string
	// Tokens are the bearer tokens, each with the topics it may use.
	Tokens []APIToken
	// Insecure serves the API without tokens, on purpose.
	Insecure bool
	// TLS holds the server's certificate and key (CertFile, KeyFile); no
	// files: plain HTTP.
	TLS TLS
	// MaxRequestSize bounds a request body in bytes.
	MaxRequestSize int64
	// MaxRequestMemory bounds the bodies of the requests being served
	// together, in bytes.
	MaxRequestMemory int64
	// MaxConns bounds the connections the API's listener holds open.
	MaxConns int
	// RoutingKeys are the path.Match patterns of each topic's
	// DELAYBRIDGE_TOPIC_<NAME>_ROUTING_KEYS, by the topic's VarName: the
	// per-message routing keys the API lets through (RoutingKeysOf).
	RoutingKeys map[string][]string
}

// APIToken is one bearer token of DELAYBRIDGE_API_TOKENS.
type APIToken struct {
	Token string
	// Topics it may use; empty: every topic.
	Topics []string
}

// MinAPITokenLen is the shortest token accepted: shorter ones can be guessed.
const MinAPITokenLen = 16

// DefaultAPIAddr is where `delaybridge api` listens when DELAYBRIDGE_API_ADDR
// is empty.
const DefaultAPIAddr = ":8090"

func (p *parser) api(e *env) API {
	a := API{
		Addr:   strings.TrimSpace(e.APIAddr),
		Tokens: p.apiTokens(e.APITokens),
		TLS:    TLS{CertFile: e.APITLSCertFile, KeyFile: e.APITLSKeyFile},
		// Read for every topic set, listed or not: see routingKeys.
		RoutingKeys: p.routingKeys(os.Environ()),
	}
	a.Insecure = p.bool("API_INSECURE", e.APIInsecure)
	a.MaxRequestSize = int64(p.intIn("API_MAX_REQUEST_SIZE", e.APIMaxRequestSize, 1024, 1<<30))
	a.MaxRequestMemory = int64(p.intIn("API_MAX_REQUEST_MEMORY", e.APIMaxRequestMemory, 1<<20, 1<<40))
	a.MaxConns = p.intIn("API_MAX_CONNS", e.APIMaxConns, 1, 1_000_000)
	if a.Addr != "" {
		if _, port, err := net.SplitHostPort(a.Addr); err != nil {
			p.fail("API_ADDR", e.APIAddr, "must be host:port or :port (port 0 picks a free port), or empty for no API")
		} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
			p.fail("API_ADDR", e.APIAddr, "port must be a number from 0 to 65535")
		}
		// Only when no token was given: tokens that were all refused have
		// said why already, and "is required" beside "is shorter than"
		// read as two contradicting problems.
		if err := a.Check(); err != nil && strings.TrimSpace(e.APITokens) == "" {
			p.errs = append(p.errs, err)
		}
	}
	p.tlsFiles("API_TLS_", a.TLS)
	return a
}

// Check refuses to serve the API without a token unless Insecure says so
// on purpose: an open API lets anyone who reaches it schedule and cancel.
func (a API) Check() error {
	if len(a.Tokens) > 0 || a.Insecure {
		return nil
	}
	return &FieldError{Var: Prefix + "_API_TOKENS", Problem: "is required to serve the HTTP API (or " + Prefix +
		"_API_TOKENS_FILE): a comma list of bearer tokens; set " + Prefix + "_API_INSECURE=true to serve it without tokens on purpose"}
}

// apiTokens parses "token[:topic+topic],…".
func (p *parser) apiTokens(s string) []APIToken {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	var out []APIToken
	seen := map[string]bool{}
	for i, item := range strings.Split(s, ",") {
		tok, topics, limited := strings.Cut(strings.TrimSpace(item), ":")
		where := "token " + strconv.Itoa(i+1)
		switch {
		case len(tok) < MinAPITokenLen:
			p.fail("API_TOKENS", s, fmt.Sprintf("%s is shorter than %d characters", where, MinAPITokenLen))
			continue
		case strings.ContainsFunc(tok, func(r rune) bool { return r > unicode.MaxASCII || !unicode.IsPrint(r) || r == ' ' }):
			p.fail("API_TOKENS", s, where+" must be printable ASCII without spaces")
			continue
		case seen[tok]:
			p.fail("API_TOKENS", s, where+" is listed twice")
			continue
		}
		seen[tok] = true
		t := APIToken{Token: tok}
		if limited {
			bad := false
			for _, name := range strings.Split(topics, "+") {
				if name = strings.TrimSpace(name); name != "" {
					t.Topics = append(t.Topics, name)
					// A token holding ':' is cut there: what follows
					// is rarely a topic name.
					bad = bad || queue.CheckTopicName(name) != nil
				}
			}
			if bad {
				p.fail("API_TOKENS", s, where+" names a topic that cannot exist after ':' (a token may not contain ':'; token:orders+reminders scopes it)")
				continue
			}
			if len(t.Topics) == 0 {
				p.fail("API_TOKENS", s, where+" has ':' but no topic after it (token:orders+reminders)")
				continue
			}
		}
		out = append(out, t)
	}
	return out
}

// values are the API's variables, the tokens in clear (Redacted hides them).
func (a API) values() map[string]string {
	toks := make([]string, len(a.Tokens))
	for i, t := range a.Tokens {
		toks[i] = t.Token
		if len(t.Topics) > 0 {
			toks[i] += ":" + strings.Join(t.Topics, "+")
		}
	}
	m := map[string]string{
		"API_ADDR":               a.Addr,
		"API_TOKENS":             strings.Join(toks, ","),
		"API_INSECURE":           strconv.FormatBool(a.Insecure),
		"API_TLS_CERT_FILE":      a.TLS.CertFile,
		"API_TLS_KEY_FILE":       a.TLS.KeyFile,
		"API_MAX_REQUEST_SIZE":   strconv.FormatInt(a.MaxRequestSize, 10),
		"API_MAX_REQUEST_MEMORY": strconv.FormatInt(a.MaxRequestMemory, 10),
		"API_MAX_CONNS":          strconv.Itoa(a.MaxConns),
	}
	maps.Copy(m, a.routingKeysValues())
	return m
}
