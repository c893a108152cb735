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
	seen   map[string]time.Time // when each record's revision was first seen
	synced bool                 // a list has succeeded
	wake   chan struct{}        // closed and replaced on every change
	events int64                // watch events received, for tests counting traffic
}

func newMirror[T any](s store.Store[T], prefix string, retry time.Duration, log *slog.Logger) *mirror[T] {
	return &mirror[T]{s: s, prefix: prefix, retry: retry, log: log, objs: map[string]store.Object[T]{}, seen: map[string]time.Time{}, wake: make(chan struct{})}
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

// since returns when this mirror first saw key at its current revision,
// on this process's clock: the record has not changed since, as far as
// this mirror knows.
func (m *mirror[T]) since(key string) time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.seen[key]
}

// received returns how many watch events the mirror has received.
func (m *mirror[T]) received() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.events
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
	now := time.Now()
	m.mu.Lock()
	fresh := make(map[string]store.Object[T], len(objs))
	seen := make(map[string]time.Time, len(objs))
	for _, o := range objs {
		fresh[o.Key] = o
		seen[o.Key] = now
		if old, ok := m.objs[o.Key]; ok && old.Revision == o.Revision {
			seen[o.Key] = m.seen[o.Key] // unchanged since then
		}
	}
	m.objs, m.seen = fresh, seen
	m.synced = true
	m.notifyLocked()
	m.mu.Unlock()
	w, err := m.s.Watch(ctx, m.prefix, rev)
	if err != nil {
		return err
	}
	defer w.Stop()
	for {
		var ev store.Event[T]
		var ok bool
		// Stop the watch when ctx ends even if the store would not (a
		// watch opened by a call that landed late, after a pause, may
		// not heed its context).
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev, ok = <-w.Events():
		}
		if !ok {
			return w.Err()
		}
		m.mu.Lock()
		m.events++
		switch ev.Type {
		case store.Created, store.Updated:
			m.objs[ev.Object.Key] = ev.Object
			m.seen[ev.Object.Key] = time.Now()
		case store.Deleted:
			delete(m.objs, ev.Object.Key)
			delete(m.seen, ev.Object.Key)
		}
		m.notifyLocked()
		m.mu.Unlock()
	}
}
