package reconcile

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/checkpoint"
	"github.com/stretchr/testify/require"
)

// memCheckpoint is a checkpoint.Store in memory for these tests: it
// applies batches as a file would, keeps every batch written, and can be
// made to hold a damaged checkpoint.
type memCheckpoint struct {
	mu      sync.Mutex
	state   checkpoint.State[*item]
	has     bool
	damaged bool
	batches []checkpoint.Batch[*item]
	// check, if set, is called with every state written.
	check func(st checkpoint.State[*item])
}

// newMemCheckpoint returns a checkpoint store holding st, if not nil.
func newMemCheckpoint(st *checkpoint.State[*item]) *memCheckpoint {
	m := &memCheckpoint{}
	if st != nil {
		m.state, m.has = *st, true
	}
	return m
}

func (m *memCheckpoint) Load() (checkpoint.State[*item], error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.damaged:
		return checkpoint.State[*item]{}, checkpoint.ErrDamaged
	case !m.has:
		return checkpoint.State[*item]{}, checkpoint.ErrNone
	}
	st := m.state
	st.Objects = slices.Clone(st.Objects)
	return st, nil
}

func (m *memCheckpoint) Write(b checkpoint.Batch[*item]) error {
	if err := b.Check(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.damaged && !b.Replace {
		return checkpoint.ErrDamaged
	}
	objs := map[string]store.Object[*item]{}
	if !b.Replace {
		for _, obj := range m.state.Objects {
			objs[obj.Key] = obj
		}
	}
	for _, obj := range b.Put {
		objs[obj.Key] = obj
	}
	for _, key := range b.Delete {
		delete(objs, key)
	}
	m.state = checkpoint.State[*item]{Identity: b.Identity, Prefix: b.Prefix, Revision: b.Revision, Seen: b.Seen}
	for _, key := range slices.Sorted(maps.Keys(objs)) {
		m.state.Objects = append(m.state.Objects, objs[key])
	}
	m.has, m.damaged = true, false
	m.batches = append(m.batches, b)
	if m.check != nil {
		m.check(m.state)
	}
	return nil
}

// latest returns the checkpoint held and the number of batches written.
func (m *memCheckpoint) latest() (checkpoint.State[*item], int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state, len(m.batches)
}

// checkpointOf returns the checkpoint of s as a controller of prefix ""
// would have written it, seen at seen.
func checkpointOf(t *testing.T, s store.Store[*item], seen time.Time) *checkpoint.State[*item] {
	t.Helper()
	objs, rev, err := s.List(context.Background(), "")
	require.NoError(t, err)
	st := &checkpoint.State[*item]{Revision: rev, Seen: seen, Objects: objs}
	if idr, ok := s.(store.Identifier); ok {
		st.Identity, err = idr.Identity(context.Background())
		require.NoError(t, err)
	}
	return st
}

// runUnsynced runs c until the returned function is called, which waits
// for Run to return; unlike start, it does not wait for the cache to sync.
func runUnsynced[T any](t *testing.T, c *Controller[T]) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	return func() {
		cancel()
		require.NoError(t, <-done)
	}
}

// keysReconciled returns the keys r has received requests for, sorted.
func (r *recorder) keysReconciled() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	keys := map[string]bool{}
	for _, req := range r.requests {
		keys[req.Key] = true
	}
	return slices.Sorted(maps.Keys(keys))
}

// deletedRequests counts the Deleted requests r has received for key.
func (r *recorder) deletedRequests(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, req := range r.requests {
		if req.Key == key && req.Deleted {
			n++
		}
	}
	return n
}

// stateAt replays history (every event of a store, in order) up to rev.
func stateAt(history []store.Event[*item], rev int64, prefix string) map[string]store.Object[*item] {
	objs := map[string]store.Object[*item]{}
	for _, ev := range history {
		if ev.Object.Revision > rev {
			break
		}
		if !strings.HasPrefix(ev.Object.Key, prefix) {
			continue
		}
		if ev.Type == store.Deleted {
			delete(objs, ev.Object.Key)
		} else {
			objs[ev.Object.Key] = ev.Object
		}
	}
	return objs
}

// keyState returns what Inspect says of key.
func keyState[T any](t *testing.T, c *Controller[T], key string) KeyState {
	t.Helper()
	for _, k := range c.Inspect(KeyQuery{Prefix: key, Limit: 1000}).Keys {
		if k.Key == key {
			return k
		}
	}
	t.Fatalf("Inspect does not list %q", key)
	return KeyState{}
}
