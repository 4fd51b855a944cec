package console

import (
	"crypto/rand"
	"encoding/hex"
	"sync"
)

// cursorStore keeps queue.List cursors on the server: a cursor holds the
// last member shown, a message's bytes, so the URL of the next page carries
// a random handle instead. The oldest handles are forgotten beyond max (a
// forgotten one means starting the listing over).
type cursorStore struct {
	mu    sync.Mutex
	max   int
	m     map[string]string
	order []string
}

func newCursorStore(max int) *cursorStore {
	return &cursorStore{max: max, m: map[string]string{}}
}

func (c *cursorStore) put(cursor string) string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	h := hex.EncodeToString(b)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[h] = cursor
	c.order = append(c.order, h)
	for len(c.order) > c.max {
		delete(c.m, c.order[0])
		c.order = c.order[1:]
	}
	return h
}

func (c *cursorStore) get(h string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cur, ok := c.m[h]
	return cur, ok
}
