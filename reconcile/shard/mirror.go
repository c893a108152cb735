package shard

import (
	"context"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/converge-go/converge/internal/ctxtime"
	"github.com/converge-go/converge/store"
)

// mirror keeps a copy of the records under a prefix, by list and watch,
// re-listing after any error. Readers take snapshots; changed wakes them.
type mirror[T any] struct {
	s      store.Store[T]
	prefix string
	retry  time.Duration
	log    *slog.Logger

	mu     sync.Mutex
	objs   map[string]store.Object[T]
	synced bool          // a list has succeeded
	wake   chan struct{} // closed and replaced on every change
}

func newMirror[T any](s store.Store[T], prefix string, retry time.Duration, log *slog.Logger) *mirror[T] {
	return &mirror[T]{s: s, prefix: prefix, retry: retry, log: log, objs: map[string]store.Object[T]{}, wake: make(chan struct{})}
}

// changed returns a channel closed at the next change.
func (m *mirror[T]) changed() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.wake
}

// snapshot returns a copy of the records and whether a list has succeeded.
func (m *mirror[T]) snapshot() (map[string]store.Object[T], bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.objs), m.synced
}

// get returns one record.
func (m *mirror[T]) get(key string) (store.Object[T], bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.objs[key]
	return o, ok
}

func (m *mirror[T]) notifyLocked() {
	close(m.wake)
	m.wake = make(chan struct{})
}

// run keeps the mirror until ctx ends.
func (m *mirror[T]) run(ctx context.Context) {
	for ctx.Err() == nil {
		if err := m.once(ctx); err != nil && ctx.Err() == nil {
			m.log.Debug("shard records watch ended; re-listing", "prefix", m.prefix, "err", err)
			if ctxtime.Sleep(ctx, m.retry) != nil {
				return
			}
		}
	}
}

// once lists, then applies the watch's events until it ends.
func (m *mirror[T]) once(ctx context.Context) error {
	objs, rev, err := m.s.List(ctx, m.prefix)
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.objs = make(map[string]store.Object[T], len(objs))
	for _, o := range objs {
		m.objs[o.Key] = o
	}
	m.synced = true
	m.notifyLocked()
	m.mu.Unlock()
	w, err := m.s.Watch(ctx, m.prefix, rev)
	if err != nil {
		return err
	}
	defer w.Stop()
	for ev := range w.Events() {
		m.mu.Lock()
		switch ev.Type {
		case store.Created, store.Updated:
			m.objs[ev.Object.Key] = ev.Object
		case store.Deleted:
			delete(m.objs, ev.Object.Key)
		}
		m.notifyLocked()
		m.mu.Unlock()
	}
	return w.Err()
}
