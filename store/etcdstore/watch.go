package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/converge-go/converge/store"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/metadata"
)

// Watch delivers every change to keys starting with prefix made after
// revision after, in revision order, exactly once, each with a freshly
// decoded value; Deleted events carry the key's last value and the revision
// of the delete.
//
// Watch returns once the watch exists on a member that has a leader: a
// returned watch is connected. It fails with store.ErrCompacted if the
// history after after has been compacted, with store.ErrUnavailable if no
// member with a leader created the watch within the open timeout (see
// WithWatchOpenTimeout), and with ctx's error if ctx ends first. A future
// after is accepted: the watch waits for it.
//
// The watch ends with store.ErrCompacted if the history it still needs is
// compacted while it catches up, with store.ErrUnavailable if its member
// loses the leader or the client is closed, with ctx's error when ctx is
// cancelled, and with nil after Stop. Resume with a new Watch after the
// revision of the last event received. The watcher implements
// store.ProgressRequester. The identity record (see Identity) is no key of
// the Store: its creation is not delivered.
func (s *Store[T]) Watch(ctx context.Context, prefix string, after int64) (store.Watcher[T], error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	if err := store.ValidatePrefix(prefix); err != nil {
		return nil, err
	}
	if err := store.ValidateRevision(after); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// Each watch has a gRPC stream of its own (etcd's client shares one
	// among the watches whose contexts carry the same metadata), so that
	// a progress request is answered as soon as this watch has caught
	// up, whatever other watches do.
	id := strconv.FormatUint(watchIDs.Add(1), 10)
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(
		metadata.AppendToOutgoingContext(ctx, watchIDKey, id)))
	wch, err := s.open(ctx, wctx, prefix, after)
	if err != nil {
		cancel()
		return nil, err
	}
	w := &watcher[T]{
		s:      s,
		parent: ctx,
		ctx:    wctx,
		cancel: cancel,
		after:  after,
		last:   after,
		out:    make(chan store.Event[T]),
		done:   make(chan struct{}),
		want:   make(chan struct{}, 1),
		synth:  make(chan struct{}),
		answer: make(chan struct{}, 1),
	}
	go w.run(wch)
	return w, nil
}

// watchIDKey is the gRPC metadata key that gives each watch its own
// stream; watchIDs numbers the watches of the process.
const watchIDKey = "converge-watch-id"

var watchIDs atomic.Uint64

// open checks that the history after after is retained, then creates the
// etcd watch and waits for the member to confirm it, all within the open
// timeout. ctx is the caller's, wctx the watch's.
func (s *Store[T]) open(ctx, wctx context.Context, prefix string, after int64) (clientv3.WatchChan, error) {
	octx, cancel := context.WithTimeout(wctx, s.openTimeout)
	defer cancel()
	fail := func(err error, format string, args ...any) error {
		if ctx.Err() == nil && octx.Err() != nil {
			return fmt.Errorf("etcdstore: %s: %w: not established within %v: %w",
				fmt.Sprintf(format, args...), store.ErrUnavailable, s.openTimeout, err)
		}
		return requestError(ctx, err, format, args...)
	}
	if after > 0 {
		// etcd would start a watch at a compaction's own revision; the
		// store's contract is that history up to it is gone. A read at
		// after fails exactly when after is compacted.
		_, err := s.client.Get(octx, s.prefix, clientv3.WithRev(after), clientv3.WithCountOnly())
		if err != nil && !errors.Is(err, rpctypes.ErrFutureRev) {
			return nil, fail(err, "watch after revision %d", after)
		}
	}
	start := after + 1
	if after == math.MaxInt64 {
		// No revision comes after; forward drops the one at after.
		start = after
	}
	wch := s.client.Watch(wctx, s.prefix+prefix, clientv3.WithPrefix(), clientv3.WithRev(start),
		clientv3.WithPrevKV(), clientv3.WithCreatedNotify())
	select {
	case resp, ok := <-wch:
		switch {
		case !ok:
			return nil, fail(errors.New("watch closed by the client"), "watch")
		case resp.Err() != nil:
			return nil, fail(resp.Err(), "watch")
		case !resp.Created:
			return nil, fmt.Errorf("%w: etcdstore: watch: first response is not the creation", store.ErrUnavailable)
		}
		return wch, nil
	case <-octx.Done():
		return nil, fail(octx.Err(), "watch")
	}
}

// watcher forwards an etcd watch's events and answers progress requests.
type watcher[T any] struct {
	s      *Store[T]
	parent context.Context // the caller's: its error ends the watch
	ctx    context.Context // the etcd watch's, cancelled by Stop
	cancel context.CancelFunc
	after  int64 // the watch delivers changes after this revision

	out     chan store.Event[T]
	done    chan struct{} // closed after out, once err is set
	err     error
	stopped atomic.Bool

	// Progress requests: want holds one pending request; the asker reads
	// the cluster's revision and stores it in need, then asks the member
	// until the forwarder answers on answer, or hands an answer that
	// needs no member to the forwarder through synth.
	want   chan struct{}
	synth  chan struct{}
	answer chan struct{}
	mu     sync.Mutex
	need   int64 // 0: no request outstanding
	last   int64 // owned by the forwarder: revision of the last response
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

// Stop ends the watch and waits for its goroutines to finish; Err is then
// nil unless the watch had already ended for another reason.
func (w *watcher[T]) Stop() {
	w.stopped.Store(true)
	w.cancel()
	<-w.done
}

// run forwards the watch until it ends, with the asker beside it.
func (w *watcher[T]) run(wch clientv3.WatchChan) {
	var asker sync.WaitGroup
	asker.Go(w.ask)
	err := w.forward(wch)
	w.cancel()
	asker.Wait()
	// done closes before out: Err must hold the reason once Events is
	// closed.
	w.err = err
	close(w.done)
	close(w.out)
}

// forward sends the events of every response in order, and the Progress
// events that answer requests after the events they cover, until the
// watch ends; it returns why it ended.
func (w *watcher[T]) forward(wch clientv3.WatchChan) error {
	for {
		var resp clientv3.WatchResponse
		var ok bool
		select {
		case resp, ok = <-wch:
		case <-w.synth:
			if !w.send(w.progressEvent(w.last)) {
				return w.ended()
			}
			continue
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
		if resp.IsProgressNotify() {
			if rev := resp.Header.Revision; w.answers(rev) && !w.send(w.progressEvent(rev)) {
				return w.ended()
			}
			continue
		}
		for _, ev := range resp.Events {
			if ev.Kv.ModRevision <= w.after || w.s.isRecord(ev.Kv.Key) {
				continue
			}
			e, err := w.event(ev)
			if err != nil {
				return err
			}
			if !w.send(e) {
				return w.ended()
			}
			w.last = max(w.last, ev.Kv.ModRevision)
		}
	}
}

// send delivers e unless the watch ends first.
func (w *watcher[T]) send(e store.Event[T]) bool {
	select {
	case w.out <- e:
		return true
	case <-w.ctx.Done():
		return false
	}
}

func (w *watcher[T]) progressEvent(rev int64) store.Event[T] {
	return store.Event[T]{Type: store.Progress, Object: store.Object[T]{Revision: rev}}
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
			var err error
			if prev, err = w.valueBefore(kv, key); err != nil {
				return store.Event[T]{}, err
			}
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

// valueBefore reads the value a delete event came without. etcd leaves
// PrevKv out when it could not read it (compacted before the event was
// sent), but also, in some versions, for an event sent before the new
// watch's request for previous values took effect. A read at the revision
// before the delete tells the two apart: ErrCompacted only when that
// revision is gone.
func (w *watcher[T]) valueBefore(kv *mvccpb.KeyValue, key string) (*mvccpb.KeyValue, error) {
	resp, err := w.s.client.Get(clientv3.WithRequireLeader(w.ctx), string(kv.Key), clientv3.WithRev(kv.ModRevision-1))
	if err != nil {
		return nil, requestError(w.parent, err, "read the last value of %q, deleted at revision %d", key, kv.ModRevision)
	}
	if len(resp.Kvs) == 0 {
		return nil, fmt.Errorf("%w: etcdstore: no value of %q before its delete at revision %d", store.ErrCompacted, key, kv.ModRevision)
	}
	return resp.Kvs[0], nil
}
