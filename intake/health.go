package intake

import (
	"errors"
	"sync"
)

// errNotConsuming is an intake's health before its first consumer is up.
var errNotConsuming = errors.New("not consuming yet")

// health is an intake's last known state, for the daemon's /readyz: nil
// while it consumes, else why it does not.
type health struct {
	mu  sync.Mutex
	err error
}

func (h *health) set(err error) {
	h.mu.Lock()
	h.err = err
	h.mu.Unlock()
}

func (h *health) get() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

// clearIf clears the error if match reports it.
func (h *health) clearIf(match func(error) bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err != nil && match(h.err) {
		h.err = nil
	}
}
