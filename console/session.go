package console

import (
	"crypto/rand"
	"encoding/base64"
	"sync"
	"time"
)

// sessions are the console's logged-in browsers, held in memory: logging out
// deletes one, so a copied cookie stops working at once; a restart ends them
// all. The cookie holds only the random id.
type sessions struct {
	mu  sync.Mutex
	ttl time.Duration
	max int
	m   map[string]time.Time // id → expiry
}

// DefaultSessionTTL is how long a login lasts when Options.SessionTTL is 0.
const DefaultSessionTTL = 12 * time.Hour

func newSessions(ttl time.Duration, max int) *sessions {
	return &sessions{ttl: ttl, max: max, m: map[string]time.Time{}}
}

// create starts a session. At the cap, expired sessions go first, then the
// one closest to expiry.
func (s *sessions) create(now time.Time) string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	id := base64.RawURLEncoding.EncodeToString(b)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.m) >= s.max {
		s.prune(now)
	}
	s.m[id] = now.Add(s.ttl)
	return id
}

func (s *sessions) prune(now time.Time) {
	var oldest string
	for id, exp := range s.m {
		if !now.Before(exp) {
			delete(s.m, id)
		} else if oldest == "" || exp.Before(s.m[oldest]) {
			oldest = id
		}
	}
	if len(s.m) >= s.max {
		delete(s.m, oldest)
	}
}

// valid reports whether id is a live session.
func (s *sessions) valid(id string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.m[id]
	if ok && !now.Before(exp) {
		delete(s.m, id)
		return false
	}
	return ok
}

func (s *sessions) end(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, id)
}
