package robustness_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"

	"github.com/converge-go/converge/store"
)

// The stores of the restore test: the server restored from a snapshot
// under its clients, and a controller's store that can hold it back.

// restoreFrom kills the server and starts it again on the same address,
// with the same token, on a new directory whose store it makes from the
// snapshot in file (-restore-from): the clients' URL then serves the
// restored store, another store by its identity.
func (s *storeServer) restoreFrom(file string) error {
	if err := s.Kill(); err != nil {
		return err
	}
	s.mu.Lock()
	old := s.dir
	s.mu.Unlock()
	dir := old + "-restored"
	tok, err := os.ReadFile(filepath.Join(old, "token"))
	if err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "token"), tok, 0o600); err != nil {
		return err
	}
	s.mu.Lock()
	s.dir, s.next = dir, []string{"-restore-from", file}
	s.mu.Unlock()
	return s.start()
}

// heldStore is a controller's store whose Lists and Watches wait while it
// is held, so that its cache cannot move to the store now served until
// released. A List or Watch waiting is signalled on waiting, and an
// Identity call whose context carries askedKey, once answered, on asked.
type heldStore struct {
	store.Store[*seqObject]
	ids     store.Identifier
	mu      sync.Mutex
	gate    chan struct{} // nil unless held; closed by release
	waiting chan struct{}
	asked   chan struct{}
}

// askedKey marks the context of the Identity calls heldStore signals.
type askedKey struct{}

func newHeldStore[S interface {
	store.Store[*seqObject]
	store.Identifier
}](s S) *heldStore {
	return &heldStore{Store: s, ids: s, waiting: make(chan struct{}, 1), asked: make(chan struct{}, 1)}
}

func (h *heldStore) hold() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.gate = make(chan struct{})
}

func (h *heldStore) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	close(h.gate)
	h.gate = nil
}

// wait waits while the store is held, or until ctx ends.
func (h *heldStore) wait(ctx context.Context) error {
	h.mu.Lock()
	gate := h.gate
	h.mu.Unlock()
	if gate == nil {
		return nil
	}
	signal(h.waiting)
	select {
	case <-gate:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (h *heldStore) List(ctx context.Context, prefix string) ([]store.Object[*seqObject], int64, error) {
	if err := h.wait(ctx); err != nil {
		return nil, 0, err
	}
	return h.Store.List(ctx, prefix)
}

func (h *heldStore) Watch(ctx context.Context, prefix string, after int64) (store.Watcher[*seqObject], error) {
	if err := h.wait(ctx); err != nil {
		return nil, err
	}
	return h.Store.Watch(ctx, prefix, after)
}

func (h *heldStore) Identity(ctx context.Context) (string, error) {
	id, err := h.ids.Identity(ctx)
	if ctx.Value(askedKey{}) != nil {
		signal(h.asked)
	}
	return id, err
}

// signal sends on ch, a channel of one slot, unless a signal is pending.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
