package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"slices"
	"strings"
)

// Token is one bearer token and the topics it may use.
type Token struct {
	Secret string
	// Topics it may use; empty: every topic.
	Topics []string
}

// authenticator checks bearer tokens. Tokens are kept as SHA-256 digests
// and every one is compared, in constant time, whatever the request sends:
// neither the time an answer takes nor its status tells how much of a token
// was right.
type authenticator struct {
	insecure bool
	digests  [][sha256.Size]byte
	topics   [][]string
}

func newAuthenticator(tokens []Token, insecure bool) *authenticator {
	a := &authenticator{insecure: insecure}
	for _, t := range tokens {
		a.digests = append(a.digests, sha256.Sum256([]byte(t.Secret)))
		a.topics = append(a.topics, slices.Clone(t.Topics))
	}
	return a
}

// grant is what a request may do: every topic (all) or the listed ones.
type grant struct {
	all    bool
	topics []string
}

func (g grant) allows(topic string) bool { return g.all || slices.Contains(g.topics, topic) }

// check finds the request's token; ok is false when it has none or one
// not configured.
func (a *authenticator) check(r *http.Request) (g grant, ok bool) {
	if a.insecure && len(a.digests) == 0 {
		return grant{all: true}, true
	}
	h := r.Header.Get("Authorization")
	scheme, secret, found := strings.Cut(h, " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return grant{}, false
	}
	d := sha256.Sum256([]byte(strings.TrimSpace(secret)))
	match := -1
	for i := range a.digests {
		if subtle.ConstantTimeCompare(d[:], a.digests[i][:]) == 1 {
			match = i
		}
	}
	if match < 0 {
		return grant{}, false
	}
	return grant{all: len(a.topics[match]) == 0, topics: a.topics[match]}, true
}

// authorized serves h only to a request with a valid token.
func (s *Server) authorized(h func(http.ResponseWriter, *http.Request, grant)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g, ok := s.auth.check(r)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="delaybridge"`)
			writeError(w, http.StatusUnauthorized, "unauthorized", "a valid token is required: Authorization: Bearer <token>")
			return
		}
		h(w, r, g)
	})
}
