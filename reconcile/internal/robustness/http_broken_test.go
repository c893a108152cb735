package robustness_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/converge-go/converge/reconcile/internal/robustness"
	"github.com/converge-go/converge/store"
)

// The defects below sit in the store that the HTTP handler serves, and the
// runs drop connections as the dropped-connection runs do: the checks must
// see through the ambiguity that the cuts create.

func TestCheckOverHTTPCatchesAcknowledgedWriteNotApplied(t *testing.T) {
	b, _ := overHTTP(brokenMemory("lost-write", func(s store.Store[robustness.Value]) store.Store[robustness.Value] {
		return &lostWrites{Store: s}
	}), dropping, 1)
	r, err := robustness.Record(t.Context(), t, b, shortRun(1))
	if err != nil {
		t.Fatal(err)
	}
	expectIllegal(t, r)
	if err := robustness.ValidateWatch(r.Ops, r.Watch.Events, r.Start, r.Revision, robustness.Keys(r.Config.Keys)); !errors.Is(err, robustness.ErrWatch) {
		t.Errorf("ValidateWatch of a served store that loses writes: %v, want ErrWatch", err)
	}
}

// shortRun is DefaultConfig with half the operations: enough for the
// defects below to show many times over.
func shortRun(seed uint64) robustness.Config {
	cfg := robustness.DefaultConfig(seed)
	cfg.Ops = 1000
	return cfg
}

// skippedRevision is the revision that skipEvent's watches never deliver.
const skippedRevision = 30

func TestWatchCheckOverHTTPCatchesSkippedEvent(t *testing.T) {
	b, _ := overHTTP(brokenMemory("skipped-event", func(s store.Store[robustness.Value]) store.Store[robustness.Value] {
		return skipEvent{s}
	}), dropping, 1)
	r, err := robustness.Record(t.Context(), t, b, shortRun(1))
	if err != nil {
		t.Fatal(err)
	}
	if r.Revision <= skippedRevision {
		t.Fatalf("the run ended at revision %d, before the skipped revision %d", r.Revision, skippedRevision)
	}
	err = robustness.ValidateWatch(r.Ops, r.Watch.Events, r.Start, r.Revision, robustness.Keys(r.Config.Keys))
	if !errors.Is(err, robustness.ErrWatch) || !strings.Contains(err.Error(), "revisions 30 to 30 missing") {
		t.Errorf("ValidateWatch of a served watch that skips revision %d: %v, want ErrWatch naming it", skippedRevision, err)
	}
}

// skipEvent is a broken store whose watches never deliver the event of
// skippedRevision; everything else, progress included, passes through.
type skipEvent struct{ store.Store[robustness.Value] }

func (s skipEvent) Watch(ctx context.Context, prefix string, after int64) (store.Watcher[robustness.Value], error) {
	w, err := s.Store.Watch(ctx, prefix, after)
	if err != nil {
		return nil, err
	}
	sw := &skippingWatcher{Watcher: w, events: make(chan store.Event[robustness.Value]), stop: make(chan struct{})}
	go sw.run()
	return sw, nil
}

type skippingWatcher struct {
	store.Watcher[robustness.Value]
	events   chan store.Event[robustness.Value]
	stop     chan struct{}
	stopOnce sync.Once
}

func (w *skippingWatcher) run() {
	defer close(w.events)
	for ev := range w.Watcher.Events() {
		if ev.Type != store.Progress && ev.Object.Revision == skippedRevision {
			continue
		}
		select {
		case w.events <- ev:
		case <-w.stop:
			return
		}
	}
}

func (w *skippingWatcher) Events() <-chan store.Event[robustness.Value] { return w.events }

func (w *skippingWatcher) Stop() {
	w.stopOnce.Do(func() { close(w.stop) })
	w.Watcher.Stop()
}

func (w *skippingWatcher) RequestProgress(ctx context.Context) error {
	pr, ok := w.Watcher.(store.ProgressRequester)
	if !ok {
		return errors.ErrUnsupported
	}
	return pr.RequestProgress(ctx)
}
