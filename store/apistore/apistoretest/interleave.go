package apistoretest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/converge-go/converge/store"
)

// interleaver is the store the layer under test writes through: the store
// the factory made, and a way to run a write of the suite right after the
// layer's next read of a key, before the layer's own write, so that the
// write lands in between (as a concurrent writer's may).
type interleaver struct {
	store.Store[json.RawMessage]

	mu    sync.Mutex
	after map[string]func()
}

var (
	_ store.Identifier               = (*interleaver)(nil)
	_ store.Encoded[json.RawMessage] = (*interleaver)(nil)
	_ store.Checker                  = (*interleaver)(nil)
)

// afterGet makes fn run once, right after the next Get of key returns from
// the store (before its caller sees the result). fn may run on another
// goroutine (a server's): it must not call t.FailNow.
func (s *interleaver) afterGet(key string, fn func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.after == nil {
		s.after = map[string]func(){}
	}
	s.after[key] = fn
}

// Get reads key, then runs what afterGet asked for.
func (s *interleaver) Get(ctx context.Context, key string) (store.Object[json.RawMessage], error) {
	obj, err := s.Store.Get(ctx, key)
	s.mu.Lock()
	fn := s.after[key]
	delete(s.after, key)
	s.mu.Unlock()
	if fn != nil {
		fn()
	}
	return obj, err
}

// Identity returns the store's identity, or an error matching
// store.ErrInvalid if it has none.
func (s *interleaver) Identity(ctx context.Context) (string, error) {
	id, ok := s.Store.(store.Identifier)
	if !ok {
		return "", fmt.Errorf("%w: %w: apistoretest: the store %T has no identity", store.ErrInvalid, errors.ErrUnsupported, s.Store)
	}
	return id.Identity(ctx)
}

// Check checks in the store (store.Checker): atomically if it can.
func (s *interleaver) Check(ctx context.Context, key string, revision int64, guards ...store.Guard) error {
	return store.Check(ctx, s.Store, key, revision, guards...)
}

// Codec returns the store's codec if it says which (store.Encoded), else
// store.JSON, for a server that judges values by the bytes the store
// keeps.
func (s *interleaver) Codec() store.Codec[json.RawMessage] {
	if e, ok := s.Store.(store.Encoded[json.RawMessage]); ok {
		return e.Codec()
	}
	return store.JSON[json.RawMessage]{}
}
