package boltstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/converge-go/converge/store"
	bolt "go.etcd.io/bbolt"
)

// historyChunk is how many history records one read transaction loads while
// a watch catches up, so that no read transaction stays open for long.
const historyChunk = 256

// Watch delivers every change to keys starting with prefix made after
// revision after, in revision order, exactly once, each with a freshly
// decoded value.
//
// If after is behind the last published revision, the watch first reads the
// persisted history, then continues with live events. If after is older than
// the retained history, Watch fails with store.ErrCompacted, or the watch
// ends with it if the history is trimmed while the watch catches up. A watch
// with more than the watch buffer (WithWatchBuffer) of live events waiting
// ends with store.ErrLagging. Cancelling ctx ends the watch with ctx's error;
// Close ends it with store.ErrUnavailable.
func (s *Store[T]) Watch(ctx context.Context, prefix string, after int64) (store.Watcher[T], error) {
	exit, err := s.enter(ctx)
	if err != nil {
		return nil, err
	}
	defer exit()
	if err := store.ValidatePrefix(prefix); err != nil {
		return nil, err
	}
	if err := store.ValidateRevision(after); err != nil {
		return nil, err
	}
	var compacted int64
	err = view(s.db, func(tx *bolt.Tx) error {
		b, err := openBuckets(tx)
		if err != nil {
			return err
		}
		compacted, err = readCounter(b.meta, compactedKey)
		return err
	})
	if err != nil {
		return nil, dbError(err)
	}
	if after < compacted {
		return nil, compactedError(after, compacted)
	}
	f := newFeed(prefix, after, s.cfg.watchBuffer)
	published, err := s.hub.subscribe(f)
	if err != nil {
		return nil, err
	}
	w := &watcher[T]{
		s:    s,
		feed: f,
		out:  make(chan store.Event[T]),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	s.watches.Add(1)
	go w.run(ctx, published)
	return w, nil
}

func compactedError(after, compacted int64) error {
	return fmt.Errorf("%w: watch after revision %d, history starts after %d", store.ErrCompacted, after, compacted)
}

// watcher is a running watch: one goroutine that sends the persisted history
// after feed.after up to the revision the feed was subscribed at, then the
// feed's live events.
type watcher[T any] struct {
	s    *Store[T]
	feed *feed
	out  chan store.Event[T]

	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}

	mu  sync.Mutex
	err error // set before out is closed
}

// errStopped ends the goroutine after Stop; Err reports nil.
var errStopped = errors.New("boltstore: watch stopped")

var _ store.ProgressRequester = (*watcher[int])(nil)

func (w *watcher[T]) Events() <-chan store.Event[T] { return w.out }

// Err says why the watch ended; it is valid once Events is closed, and nil
// before.
func (w *watcher[T]) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// RequestProgress asks the watch to send a store.Progress event whose
// revision R is at least the store's revision now, after every event up to
// R (see store.ProgressRequester). The store is in this process, so the
// answer comes as soon as the watch has sent those events. It fails with
// store.ErrInvalid for a nil ctx, with ctx's error, and with
// store.ErrUnavailable once the watch or the store has ended.
func (w *watcher[T]) RequestProgress(ctx context.Context) error {
	rev, err := w.s.Revision(ctx)
	if err != nil {
		return err
	}
	return w.s.hub.requestProgress(w.feed, rev)
}

// Stop ends the watch and waits for its goroutine to exit.
func (w *watcher[T]) Stop() {
	w.stopOnce.Do(func() { close(w.stop) })
	<-w.done
}

func (w *watcher[T]) run(ctx context.Context, published int64) {
	defer w.s.watches.Done()
	err := w.catchUp(ctx, published)
	if err == nil {
		err = w.live(ctx)
	}
	w.s.hub.unsubscribe(w.feed)
	if !errors.Is(err, errStopped) {
		w.mu.Lock()
		w.err = err
		w.mu.Unlock()
	}
	close(w.out)
	close(w.done)
}

// catchUp sends the history records after feed.after up to published. A
// watch from published or later (a future revision, up to math.MaxInt64)
// has nothing to catch up on: its feed holds back what it does not want.
func (w *watcher[T]) catchUp(ctx context.Context, published int64) error {
	if w.feed.after >= published {
		return nil
	}
	next := w.feed.after + 1
	for next <= published {
		evs, err := w.readHistory(next, published)
		if err != nil {
			return err
		}
		for _, ev := range evs {
			if err := w.send(ctx, ev); err != nil {
				return err
			}
		}
		next += historyChunk
	}
	return nil
}

// readHistory reads the history records from..min(to, from+historyChunk-1),
// which must all be there, and returns those the watch wants.
func (w *watcher[T]) readHistory(from, to int64) ([]rawEvent, error) {
	to = min(to, from+historyChunk-1)
	var evs []rawEvent
	err := view(w.s.db, func(tx *bolt.Tx) error {
		b, err := openBuckets(tx)
		if err != nil {
			return err
		}
		c := b.history.Cursor()
		k, v := c.Seek(revKey(from))
		for want := from; want <= to; want++ {
			if k == nil || revFromKey(k) != want {
				compacted, err := readCounter(b.meta, compactedKey)
				if err != nil {
					return err
				}
				if want <= compacted {
					return compactedError(w.feed.after, compacted)
				}
				return fmt.Errorf("%w: history record %d is missing", ErrCorrupt, want)
			}
			ev, err := decodeHistory(want, v)
			if err != nil {
				return err
			}
			if strings.HasPrefix(ev.key, w.feed.prefix) {
				evs = append(evs, ev)
			}
			k, v = c.Next()
		}
		return nil
	})
	switch {
	case errors.Is(err, store.ErrCompacted):
		return nil, err
	case err != nil:
		return nil, dbError(err)
	}
	return evs, nil
}

// live sends the feed's events until the watch ends.
func (w *watcher[T]) live(ctx context.Context) error {
	for {
		if ev, ok := w.feed.pop(); ok {
			if err := w.send(ctx, ev); err != nil {
				return err
			}
			continue
		}
		select {
		case <-w.feed.wake:
		case <-w.feed.ended:
			return w.feed.err()
		case <-ctx.Done():
			return ctx.Err()
		case <-w.stop:
			return errStopped
		}
	}
}

// send decodes ev and hands it to the consumer.
func (w *watcher[T]) send(ctx context.Context, raw rawEvent) error {
	ev := store.Event[T]{Type: raw.typ, Object: store.Object[T]{Revision: raw.rev}}
	if raw.typ != store.Progress {
		// A live event brings its cause; one read back from the file's
		// history finds it in the hub's table, if still kept.
		ev.Cause = raw.cause
		if ev.Cause == "" {
			ev.Cause = w.s.hub.causeOf(raw.rev)
		}
		v, err := w.s.decode(raw.key, raw.value)
		if err != nil {
			return err
		}
		ev.Object = store.Object[T]{Key: raw.key, Value: v, Revision: raw.rev, CreateRevision: raw.createRev}
	}
	select {
	case w.out <- ev:
		return nil
	case <-w.feed.ended:
		return w.feed.err()
	case <-ctx.Done():
		return ctx.Err()
	case <-w.stop:
		return errStopped
	}
}
