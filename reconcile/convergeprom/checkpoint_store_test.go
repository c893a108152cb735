package convergeprom_test

import (
	"maps"
	"slices"
	"sync"

	"github.com/converge-go/converge/reconcile/checkpoint"
	"github.com/converge-go/converge/store"
)

// memCheckpoint is a checkpoint.Store in memory: it holds one state (none
// if nil), damaged while damaged is set (until a whole write), and fails
// every write with writeErr while that is set.
type memCheckpoint[T any] struct {
	mu       sync.Mutex
	state    *checkpoint.State[T]
	damaged  bool
	writeErr error
}

func (m *memCheckpoint[T]) Load() (checkpoint.State[T], error) {
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

func (m *memCheckpoint[T]) Write(b checkpoint.Batch[T]) error {
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

// setWriteErr makes every write fail with err, or succeed again with nil.
func (m *memCheckpoint[T]) setWriteErr(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.writeErr = err
}
