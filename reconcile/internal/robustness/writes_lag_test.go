package robustness_test

import (
	"context"
	"sync"
	"time"

	"github.com/converge-go/converge/store"
)

// laggingStore delays every event of its watches by lag after the inner
// watch delivered it, keeping their order: a cache fed by it lags the
// store's writes, as one fed by a remote store's watch does (the in-memory
// store's watch otherwise delivers before the next reconcile starts).
type laggingStore struct {
	store.Store[*replicaSet]
	lag time.Duration
}

func (s laggingStore) Watch(ctx context.Context, prefix string, after int64) (store.Watcher[*replicaSet], error) {
	inner, err := s.Store.Watch(ctx, prefix, after)
	if err != nil {
		return nil, err
	}
	w := &laggingWatcher{inner: inner, out: make(chan store.Event[*replicaSet]), stop: make(chan struct{})}
	go w.forward(s.lag)
	return w, nil
}

type laggingWatcher struct {
	inner    store.Watcher[*replicaSet]
	out      chan store.Event[*replicaSet]
	stop     chan struct{}
	stopOnce sync.Once
}

// forward hands each inner event on lag after it arrived, then closes out
// once the inner watch ended or the watch was stopped.
func (w *laggingWatcher) forward(lag time.Duration) {
	defer close(w.out)
	type timed struct {
		ev store.Event[*replicaSet]
		at time.Time
	}
	queued := make(chan timed, 1024)
	go func() {
		defer close(queued)
		for ev := range w.inner.Events() {
			select {
			case queued <- timed{ev, time.Now().Add(lag)}:
			case <-w.stop:
				return
			}
		}
	}()
	for t := range queued {
		timer := time.NewTimer(time.Until(t.at))
		select {
		case <-timer.C:
		case <-w.stop:
			timer.Stop()
			return
		}
		select {
		case w.out <- t.ev:
		case <-w.stop:
			return
		}
	}
}

func (w *laggingWatcher) Events() <-chan store.Event[*replicaSet] { return w.out }
func (w *laggingWatcher) Err() error                              { return w.inner.Err() }

func (w *laggingWatcher) Stop() {
	w.stopOnce.Do(func() { close(w.stop) })
	w.inner.Stop()
}

// RequestProgress forwards to the inner watch: its Progress event comes
// after the changes before it, lagging like them.
func (w *laggingWatcher) RequestProgress(ctx context.Context) error {
	if p, ok := w.inner.(store.ProgressRequester); ok {
		return p.RequestProgress(ctx)
	}
	return nil
}
