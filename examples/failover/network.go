package main

import (
	"context"
	"sync"

	"github.com/converge-go/converge/store"
)

// delayed is a network that holds a write: each Update sent through it
// waits until deliver is called (or its context ends) before it reaches
// the store, as a request delayed in the network, or sent by a process
// paused right after it decided to send it, would. Nothing its sender
// learns meanwhile can call it back. Reads and other writes pass through.
type delayed[T any] struct {
	store.Store[T]
	sent    chan struct{} // closed once an Update is held
	release chan struct{} // closed by deliver

	sentOnce, deliverOnce sync.Once
}

func newDelayed[T any](s store.Store[T]) *delayed[T] {
	return &delayed[T]{Store: s, sent: make(chan struct{}), release: make(chan struct{})}
}

// deliver lets the held writes, and every later one, through.
func (d *delayed[T]) deliver() { d.deliverOnce.Do(func() { close(d.release) }) }

// Update holds the write until deliver, then sends it to the store.
func (d *delayed[T]) Update(ctx context.Context, key string, value T, revision int64, guards ...store.Guard) (store.Object[T], error) {
	d.sentOnce.Do(func() { close(d.sent) })
	select {
	case <-d.release:
	case <-ctx.Done():
		return store.Object[T]{}, ctx.Err()
	}
	return d.Store.Update(ctx, key, value, revision, guards...)
}
