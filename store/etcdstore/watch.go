package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/converge-go/converge/store"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Watch delivers every change to keys starting with prefix made after
// revision after, in revision order, exactly once, each with a freshly
// decoded value; Deleted events carry the key's last value and the revision
// of the delete.
//
// The watch ends with store.ErrCompacted if the history after after has
// been compacted (now or while the watch catches up), with
// store.ErrUnavailable if its member loses the leader or the client is
// closed, with ctx's error when ctx is cancelled, and with nil after Stop.
// Resume with a new Watch after the revision of the last event received.
func (s *Store[T]) Watch(ctx context.Context, prefix string, after int64) (store.Watcher[T], error) {
	if err := store.ValidatePrefix(prefix); err != nil {
		return nil, err
	}
	if err := store.ValidateRevision(after); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	w := &watcher[T]{
		s:      s,
		parent: ctx,
		ctx:    wctx,
		cancel: cancel,
		out:    make(chan store.Event[T]),
		done:   make(chan struct{}),
	}
	go w.run(prefix, after)
	return w, nil
}

// watcher forwards an etcd watch's events, one goroutine per watch.
type watcher[T any] struct {
	s      *Store[T]
	parent context.Context // the caller's: its error ends the watch
	ctx    context.Context // the etcd watch's, cancelled by Stop
	cancel context.CancelFunc

	out     chan store.Event[T]
	done    chan struct{} // closed after out, once err is set
	err     error
	stopped atomic.Bool
}

func (w *watcher[T]) Events() <-chan store.Event[T] { return w.out }

// Err returns why the watch ended; it is valid once Events is closed.
func (w *watcher[T]) Err() error {
	select {
	case <-w.done:
		return w.err
	default:
		return nil
	}
}

// Stop ends the watch and waits for its goroutine to finish; Err is then
// nil unless the watch had already ended for another reason.
func (w *watcher[T]) Stop() {
	w.stopped.Store(true)
	w.cancel()
	<-w.done
}

// run opens the etcd watch and forwards it. Opening waits for a connection
// to a member, so it happens here: Watch never blocks, and Stop or the
// caller's context end a watch that is still waiting to open.
func (w *watcher[T]) run(prefix string, after int64) {
	// done closes before out: Err must hold the reason once Events is
	// closed.
	defer close(w.out)
	defer close(w.done)
	defer w.cancel()
	if after > 0 {
		// etcd would start a watch at a compaction's own revision; the
		// store's contract is that history up to it is gone. A read at
		// after fails exactly when after is compacted.
		_, err := w.s.client.Get(w.ctx, w.s.prefix, clientv3.WithRev(after), clientv3.WithCountOnly())
		if err != nil && !errors.Is(err, rpctypes.ErrFutureRev) {
			if !w.stopped.Load() { // after Stop, the watch ends with nil
				w.err = requestError(w.parent, err, "watch after revision %d", after)
			}
			return
		}
	}
	wch := w.s.client.Watch(w.ctx, w.s.prefix+prefix,
		clientv3.WithPrefix(), clientv3.WithRev(after+1), clientv3.WithPrevKV())
	w.err = w.forward(wch)
}

// forward sends the events of every response in order until the watch ends,
// and returns why it ended.
func (w *watcher[T]) forward(wch clientv3.WatchChan) error {
	for {
		var resp clientv3.WatchResponse
		var ok bool
		select {
		case resp, ok = <-wch:
		case <-w.ctx.Done():
			return w.ended()
		}
		if !ok {
			return w.ended()
		}
		if err := resp.Err(); err != nil {
			if w.stopped.Load() {
				return nil
			}
			return requestError(w.parent, err, "watch")
		}
		for _, ev := range resp.Events {
			e, err := w.event(ev)
			if err != nil {
				return err
			}
			select {
			case w.out <- e:
			case <-w.ctx.Done():
				return w.ended()
			}
		}
	}
}

// ended returns the error of a watch whose etcd channel closed or whose
// context ended: nil after Stop, the caller's context's error, or
// store.ErrUnavailable (the client was closed).
func (w *watcher[T]) ended() error {
	switch {
	case w.stopped.Load():
		return nil
	case w.parent.Err() != nil:
		return w.parent.Err()
	}
	return fmt.Errorf("%w: etcdstore: watch closed by the client", store.ErrUnavailable)
}

// event maps an etcd event to a store event.
func (w *watcher[T]) event(ev *clientv3.Event) (store.Event[T], error) {
	kv := ev.Kv
	key := strings.TrimPrefix(string(kv.Key), w.s.prefix)
	if ev.Type == clientv3.EventTypeDelete {
		prev := ev.PrevKv
		if prev == nil {
			// etcd could not read the value before the delete: it was
			// compacted before the event was sent.
			return store.Event[T]{}, fmt.Errorf("%w: etcdstore: last value of %q, deleted at revision %d, was compacted", store.ErrCompacted, key, kv.ModRevision)
		}
		v, err := w.s.decode(key, prev.Value)
		if err != nil {
			return store.Event[T]{}, err
		}
		return store.Event[T]{Type: store.Deleted, Object: store.Object[T]{
			Key: key, Value: v, Revision: kv.ModRevision, CreateRevision: prev.CreateRevision,
		}}, nil
	}
	obj, err := w.s.object(kv)
	if err != nil {
		return store.Event[T]{}, err
	}
	typ := store.Updated
	if kv.CreateRevision == kv.ModRevision {
		typ = store.Created
	}
	return store.Event[T]{Type: typ, Object: obj}, nil
}
