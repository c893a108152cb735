package checkpointtest

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/converge-go/converge/store"
)

// errStopped is the error of every call while a Switch serves nothing.
var errStopped = fmt.Errorf("%w: checkpointtest: the store is stopped", store.ErrUnavailable)

// Switch is a store.Store that serves another store, and can stop serving
// it and serve another, as a process that opens a store's file serves
// whatever file is there when it starts: a copy of an older one, or a new
// one. While it serves none (Stop), every call fails with an error
// matching store.ErrUnavailable, and every watch ends with one.
//
// It answers the identity given to Serve, or the served store's own
// (store.Identifier; errors.ErrUnsupported for a store without one): a
// store in memory served under the identity of another models that
// store's file restored from a copy. The zero Switch serves nothing; its
// methods are safe for concurrent use.
type Switch[T any] struct {
	mu       sync.Mutex
	cur      store.Store[T]
	identity string
	stopped  chan struct{} // closed when cur stops being served
	served   chan struct{} // closed at the next Serve
	resume   bool          // see SetResume
}

var (
	_ store.Store[int]   = (*Switch[int])(nil)
	_ store.Identifier   = (*Switch[int])(nil)
	_ store.Watcher[int] = (*switchWatcher[int])(nil)
)

// Serve makes the switch serve s under identity ("": s's own), ending
// the watches of the store it served before.
func (w *Switch[T]) Serve(s store.Store[T], identity string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopLocked()
	w.cur, w.identity, w.stopped = s, identity, make(chan struct{})
	if w.served != nil {
		close(w.served)
		w.served = nil
	}
}

// SetResume makes the watches begun from now on outlive Stop and Serve, as
// etcd's client's watches outlive a restart of their member: while the
// switch is stopped such a watch is silent (its progress requests go
// unanswered), and once a store is served it resumes on that store after
// the last revision it delivered, whatever that store holds.
func (w *Switch[T]) SetResume(resume bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.resume = resume
}

// nextServe returns a channel closed at the next Serve.
func (w *Switch[T]) nextServe() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.served == nil {
		w.served = make(chan struct{})
	}
	return w.served
}

// Stop makes the switch serve nothing, ending the watches of the store it
// served. The store is not closed: it is the caller's.
func (w *Switch[T]) Stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopLocked()
	w.cur = nil
}

func (w *Switch[T]) stopLocked() {
	if w.stopped != nil {
		close(w.stopped)
		w.stopped = nil
	}
}

// serving returns the store served and the channel closed when it stops
// being served, or errStopped.
func (w *Switch[T]) serving() (store.Store[T], string, <-chan struct{}, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cur == nil {
		return nil, "", nil, errStopped
	}
	return w.cur, w.identity, w.stopped, nil
}

func (w *Switch[T]) Get(ctx context.Context, key string) (store.Object[T], error) {
	s, _, _, err := w.serving()
	if err != nil {
		return store.Object[T]{}, err
	}
	return s.Get(ctx, key)
}

func (w *Switch[T]) List(ctx context.Context, prefix string) ([]store.Object[T], int64, error) {
	s, _, _, err := w.serving()
	if err != nil {
		return nil, 0, err
	}
	return s.List(ctx, prefix)
}

func (w *Switch[T]) Create(ctx context.Context, key string, value T, guards ...store.Guard) (store.Object[T], error) {
	s, _, _, err := w.serving()
	if err != nil {
		return store.Object[T]{}, err
	}
	return s.Create(ctx, key, value, guards...)
}

func (w *Switch[T]) Update(ctx context.Context, key string, value T, revision int64, guards ...store.Guard) (store.Object[T], error) {
	s, _, _, err := w.serving()
	if err != nil {
		return store.Object[T]{}, err
	}
	return s.Update(ctx, key, value, revision, guards...)
}

func (w *Switch[T]) Delete(ctx context.Context, key string, revision int64, guards ...store.Guard) (int64, error) {
	s, _, _, err := w.serving()
	if err != nil {
		return 0, err
	}
	return s.Delete(ctx, key, revision, guards...)
}

func (w *Switch[T]) Revision(ctx context.Context) (int64, error) {
	s, _, _, err := w.serving()
	if err != nil {
		return 0, err
	}
	return s.Revision(ctx)
}

// Identity returns the identity given to Serve, else the served store's.
func (w *Switch[T]) Identity(ctx context.Context) (string, error) {
	s, id, _, err := w.serving()
	switch {
	case err != nil:
		return "", err
	case id != "":
		return id, nil
	}
	idr, ok := s.(store.Identifier)
	if !ok {
		return "", errors.ErrUnsupported
	}
	return idr.Identity(ctx)
}

// Watch watches the served store until the switch stops serving it: the
// watch then ends with an error matching store.ErrUnavailable (see
// SetResume for watches that outlive it). It is a store.ProgressRequester
// if the served store's watch is.
func (w *Switch[T]) Watch(ctx context.Context, prefix string, after int64) (store.Watcher[T], error) {
	s, _, stopped, err := w.serving()
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	resume := w.resume
	w.mu.Unlock()
	if resume {
		return w.resumingWatch(ctx, s, stopped, prefix, after)
	}
	wctx, cancel := context.WithCancel(ctx)
	inner, err := s.Watch(wctx, prefix, after)
	if err != nil {
		cancel()
		return nil, err
	}
	sw := &switchWatcher[T]{Watcher: inner, ctx: ctx, stopped: stopped, cancel: cancel}
	go func() {
		select {
		case <-stopped:
			cancel()
		case <-wctx.Done():
		}
	}()
	if pr, ok := inner.(store.ProgressRequester); ok {
		return &progressWatcher[T]{switchWatcher: sw, pr: pr}, nil
	}
	return sw, nil
}

// switchWatcher is a watch of a served store, ended when it stops being
// served.
type switchWatcher[T any] struct {
	store.Watcher[T]
	ctx     context.Context
	stopped <-chan struct{}
	cancel  context.CancelFunc
}

// Err is the served watch's error, or errStopped if it ended because the
// switch stopped serving its store.
func (w *switchWatcher[T]) Err() error {
	select {
	case <-w.stopped:
		if w.ctx.Err() == nil {
			return errStopped
		}
	default:
	}
	return w.Watcher.Err()
}

func (w *switchWatcher[T]) Stop() {
	w.Watcher.Stop()
	w.cancel()
}

// progressWatcher is a switchWatcher whose served watch can report
// progress.
type progressWatcher[T any] struct {
	*switchWatcher[T]
	pr store.ProgressRequester
}

func (w *progressWatcher[T]) RequestProgress(ctx context.Context) error {
	return w.pr.RequestProgress(ctx)
}
