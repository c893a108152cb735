// Package checkpointtest holds a checkpoint.Store in memory (Memory), for
// the tests of what reports or acts on a controller's checkpoint (its
// health, its page, its metrics): one state, damage and failing writes set
// at will; and the suite every store backend runs (Run): a controller
// started from its checkpoint while its store is stopped and restored
// from a copy, rolled forward, emptied or replaced, with checkpoints seen
// in the past, near and past their maximum age, or in the future. Switch
// serves a store that can be stopped and swapped, for Run's backends.
package checkpointtest

import (
	"maps"
	"slices"
	"sync"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/checkpoint"
)

// Memory is a checkpoint.Store in memory. It holds one state (none until
// a write, or the one given to NewMemory); while damaged (SetDamaged) Load
// fails with checkpoint.ErrDamaged and only a write with Replace succeeds
// (and clears the damage); while a write error is set (SetWriteErr) every
// write fails with it. Its methods are safe for concurrent use; the zero
// Memory holds no checkpoint.
type Memory[T any] struct {
	mu       sync.Mutex
	state    *checkpoint.State[T]
	damaged  bool
	writeErr error
}

var _ checkpoint.Store[int] = (*Memory[int])(nil)

// NewMemory returns a Memory holding st, or none if st is nil.
func NewMemory[T any](st *checkpoint.State[T]) *Memory[T] {
	m := &Memory[T]{}
	if st != nil {
		cp := *st
		cp.Objects = slices.Clone(st.Objects)
		m.state = &cp
	}
	return m
}

// Load returns the state held (a copy), checkpoint.ErrNone if none is, or
// checkpoint.ErrDamaged while damaged.
func (m *Memory[T]) Load() (checkpoint.State[T], error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.damaged:
		return checkpoint.State[T]{}, checkpoint.ErrDamaged
	case m.state == nil:
		return checkpoint.State[T]{}, checkpoint.ErrNone
	}
	st := *m.state
	st.Objects = slices.Clone(st.Objects)
	return st, nil
}

// Write applies b whole: the write error if one is set, the error of
// b.Check, checkpoint.ErrDamaged for a batch without Replace while
// damaged, else nil.
func (m *Memory[T]) Write(b checkpoint.Batch[T]) error {
	if err := b.Check(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.writeErr != nil:
		return m.writeErr
	case m.damaged && !b.Replace:
		return checkpoint.ErrDamaged
	}
	objs := map[string]store.Object[T]{}
	if m.state != nil && !b.Replace {
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
	st := checkpoint.State[T]{Identity: b.Identity, Prefix: b.Prefix, Revision: b.Revision, Seen: b.Seen}
	for _, key := range slices.Sorted(maps.Keys(objs)) {
		st.Objects = append(st.Objects, objs[key])
	}
	m.state, m.damaged = &st, false
	return nil
}

// SetDamaged makes the checkpoint damaged, or not.
func (m *Memory[T]) SetDamaged(damaged bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.damaged = damaged
}

// SetWriteErr makes every write fail with err, or succeed again with nil.
func (m *Memory[T]) SetWriteErr(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.writeErr = err
}
