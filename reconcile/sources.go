package reconcile

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/converge-go/converge/reconcile/internal/cache"
	"github.com/converge-go/converge/store"
)

// Source wakes keys of a controller from outside its primary store: another
// store, events from the world, timers.
//
// A Source may also report its state: one with a method Err() error (as
// drift.Source has) has that error, while it is not nil, in
// Health.Degraded, named by its Name() string if it has that method too,
// else by its index in Options.Sources. It does not make the controller
// unready.
type Source interface {
	// Start runs until ctx ends, calling enqueue for every key to reconcile.
	// It returns nil when ctx ends; any other error is logged and the
	// source is started again after a backoff. A key outside the
	// controller's view (not a valid store key, or not under
	// Options.Prefix) is refused by enqueue: logged the first time,
	// counted in Health.Refused, never reconciled.
	Start(ctx context.Context, enqueue func(key string)) error
}

// sourceErr returns what src says is wrong with it now: the health of a
// source over another store, or the Err of a source that has one (a
// drift.Source's latest failed poll).
func sourceErr(src Source) error {
	switch s := src.(type) {
	case interface{ health() error }:
		return s.health()
	case interface{ Err() error }:
		return s.Err()
	}
	return nil
}

// sourceName names src in Health: its Name, if it has one, else its
// index in Options.Sources.
func sourceName(src Source, i int) string {
	if n, ok := src.(interface{ Name() string }); ok && n.Name() != "" {
		return fmt.Sprintf("%q", n.Name())
	}
	return strconv.Itoa(i)
}

// SourceFunc adapts a function to Source.
type SourceFunc func(ctx context.Context, enqueue func(key string)) error

// Start calls f.
func (f SourceFunc) Start(ctx context.Context, enqueue func(key string)) error {
	return f(ctx, enqueue)
}

// FromChannel wakes the keys received on ch: events from the world (a
// process exited, a file changed). It stops when ctx ends or ch is closed.
func FromChannel(ch <-chan string) Source {
	return SourceFunc(func(ctx context.Context, enqueue func(string)) error {
		for {
			select {
			case key, ok := <-ch:
				if !ok {
					<-ctx.Done()
					return nil
				}
				enqueue(key)
			case <-ctx.Done():
				return nil
			}
		}
	})
}

// FromStore watches another store (under prefix) and wakes the primary keys
// that mapper returns for each change, such as a pod's change waking its
// replica set. mapper's old is nil for a new object and cur nil for a
// deleted one (old then holds its last value), so a re-parented child can
// wake both its old and its new owner. A key returned outside the
// controller's view is refused, as a source's is (see Source). It keeps its own cache of that store, with the same list,
// watch, resume and re-list behaviour as the primary cache, and reports
// itself degraded while the store is unreachable.
func FromStore[C any](s store.Store[C], prefix string, mapper func(old, cur *store.Object[C]) []string) Source {
	return &storeSource[C]{store: s, prefix: prefix, mapper: mapper}
}

type storeSource[C any] struct {
	store  store.Store[C]
	prefix string
	mapper func(old, cur *store.Object[C]) []string
	cache  atomic.Pointer[cache.Cache[C]]
}

// Start runs the source on its own: no logs, the default heartbeat. A
// controller starts it with its own logger and heartbeat instead.
func (s *storeSource[C]) Start(ctx context.Context, enqueue func(string)) error {
	return s.startFor(ctx, enqueue, slog.New(slog.DiscardHandler), defaultHeartbeat, nil)
}

func (s *storeSource[C]) startFor(ctx context.Context, enqueue func(string), log *slog.Logger, hb time.Duration, own *echoes) error {
	if s.mapper == nil {
		return fmt.Errorf("%w: FromStore needs a mapper", ErrInvalid)
	}
	in := cache.New(s.store, cache.Options[C]{
		Prefix:    s.prefix,
		Logger:    log.With("source", "store", "prefix", s.prefix),
		Heartbeat: hb,
		Hooks: cache.Hooks[C]{Changed: func(changes []cache.Change[C]) {
			for i := range changes {
				ch := &changes[i]
				if own.echoed(s.store, ch.Key(), ch.Revision(), !ch.HasCur) {
					continue // the echo of the controller's own write (Through)
				}
				for _, key := range s.mapper(ch.Pointers()) {
					enqueue(key)
				}
			}
		}},
	})
	s.cache.Store(in)
	in.Run(ctx)
	return nil
}

// health reports why the source's cache is not following its store.
func (s *storeSource[C]) health() error {
	if in := s.cache.Load(); in != nil {
		return in.Health()
	}
	return nil
}

// controllerSource is a source of this package that a controller starts
// with its logger, heartbeat interval and table of echoes to skip.
type controllerSource interface {
	startFor(ctx context.Context, enqueue func(string), log *slog.Logger, heartbeat time.Duration, own *echoes) error
}

// Named gives src a name: the name the controller shows for it in
// KeyState triggers ("source NAME"), the debug page and Health.Degraded,
// in place of its index in Options.Sources or a name it had. What src
// reports of itself (a store source's health, an Err method) and how a
// controller starts it are kept. Give each source of a controller its own
// name.
func Named(name string, src Source) Source { return &named{src: src, name: name} }

type named struct {
	src  Source
	name string
}

func (n *named) Name() string { return n.name }

func (n *named) Start(ctx context.Context, enqueue func(string)) error {
	return n.src.Start(ctx, enqueue)
}

func (n *named) startFor(ctx context.Context, enqueue func(string), log *slog.Logger, hb time.Duration, own *echoes) error {
	if cs, ok := n.src.(controllerSource); ok {
		return cs.startFor(ctx, enqueue, log, hb, own)
	}
	return n.src.Start(ctx, enqueue)
}

// Err is what src reports of itself (see Source), nil if nothing.
func (n *named) Err() error { return sourceErr(n.src) }
