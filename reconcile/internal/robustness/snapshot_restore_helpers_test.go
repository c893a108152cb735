package robustness_test

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/converge-go/converge/internal/syncbuf"
	"github.com/converge-go/converge/reconcile"
)

// seen is what one reconcile was handed for a key: the spec of the object
// (the last one the cache held, if Deleted) and its revision.
type seen struct {
	Seq      int
	Deleted  bool
	Revision int64
}

// reconcileLog is a reconciler that records every reconcile it has done,
// key by key in order (a key's reconciles never overlap), and acts on
// nothing else. While held (holdFrom), a reconcile of an object at the
// given revision or above waits for release before it is done.
type reconcileLog struct {
	mu   sync.Mutex
	keys map[string][]seen
	gate chan struct{} // nil unless held; closed by release
	from int64
}

func (l *reconcileLog) Reconcile(ctx context.Context, req reconcile.Request[*seqObject]) (reconcile.Result, error) {
	s := seen{Deleted: req.Deleted, Revision: req.Object.Revision}
	if req.Object.Value != nil {
		s.Seq = req.Object.Value.Spec.Seq
	}
	l.mu.Lock()
	gate, from := l.gate, l.from
	l.mu.Unlock()
	if gate != nil && s.Revision >= from {
		select {
		case <-gate:
		case <-ctx.Done():
			return reconcile.Result{}, ctx.Err()
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.keys == nil {
		l.keys = map[string][]seen{}
	}
	l.keys[req.Key] = append(l.keys[req.Key], s)
	return reconcile.Result{}, nil
}

// holdFrom holds the reconciles of objects at revision from or above.
func (l *reconcileLog) holdFrom(from int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.gate, l.from = make(chan struct{}), from
}

// release lets the held reconciles be done.
func (l *reconcileLog) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	close(l.gate)
	l.gate = nil
}

// latest returns each key's latest reconcile.
func (l *reconcileLog) latest() map[string]seen {
	l.mu.Lock()
	defer l.mu.Unlock()
	last := make(map[string]seen, len(l.keys))
	for key, all := range l.keys {
		last[key] = all[len(all)-1]
	}
	return last
}

// all returns every key's reconciles, in order.
func (l *reconcileLog) all() map[string][]seen {
	l.mu.Lock()
	defer l.mu.Unlock()
	all := make(map[string][]seen, len(l.keys))
	for key, s := range l.keys {
		all[key] = append([]seen(nil), s...)
	}
	return all
}

// restoreController is a controller of a reconcileLog over one prefix of
// a heldStore, and what it logs.
type restoreController struct {
	c      *reconcile.Controller[*seqObject]
	log    *reconcileLog
	held   *heldStore
	prefix string
	logs   *syncbuf.Buffer
}

// runRestoreController runs a controller named name over prefix of s until
// t ends.
func runRestoreController(t *testing.T, name, prefix string, s *heldStore) *restoreController {
	t.Helper()
	rc := &restoreController{log: &reconcileLog{}, held: s, prefix: prefix, logs: new(syncbuf.Buffer)}
	c, err := reconcile.New[*seqObject](s, rc.log, reconcile.Options[*seqObject]{
		Name:              name,
		Prefix:            prefix,
		Workers:           2,
		HeartbeatInterval: 200 * time.Millisecond,
		Logger:            slog.New(slog.NewTextHandler(rc.logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	rc.c = c
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("%s: Run: %v", name, err)
		}
		if t.Failed() {
			t.Logf("%s's logs:\n%s", name, rc.logs)
		}
	})
	return rc
}

// waitAcross begins a WaitForRevision(rev), and checks at its return that
// the cache holds want and the reconciles were of it (checkCache,
// checkReconciled); the channel receives its error. Its reading of the
// store's identity is signalled (heldStore.asked).
func (rc *restoreController) waitAcross(t *testing.T, ctx context.Context, rev int64, want map[string]int, floor int64, gone map[string]int) <-chan error {
	done := make(chan error, 1)
	go func() {
		err := rc.c.WaitForRevision(context.WithValue(ctx, askedKey{}, true), rev)
		if err == nil {
			when := fmt.Sprintf("at the return of its WaitForRevision(%d)", rev)
			rc.checkCache(t, when, want, floor)
			rc.checkReconciled(t, when, want, floor, gone)
		}
		done <- err
	}()
	return done
}

// relists counts the times the controller re-listed a store of another
// identity (its warning, see reconcile's replaced.go).
func (rc *restoreController) relists() int {
	return strings.Count(rc.logs.String(), "the store has another identity (restored or replaced); re-listed it whole")
}

// inView returns the keys of want under the controller's prefix.
func (rc *restoreController) inView(want map[string]int) map[string]int {
	in := map[string]int{}
	for key, n := range want {
		if strings.HasPrefix(key, rc.prefix) {
			in[key] = n
		}
	}
	return in
}

// checkReconciled checks that the controller's latest reconcile of every
// key in its view of want was handed the key's spec, of an object at floor
// or above, and of every other key it ever reconciled, its deletion: at
// floor or above for the keys of gone (those the cache held when the
// store became one that lacks them).
func (rc *restoreController) checkReconciled(t *testing.T, when string, want map[string]int, floor int64, gone map[string]int) {
	t.Helper()
	want, gone = rc.inView(want), rc.inView(gone)
	last := rc.log.latest()
	for key, n := range want {
		s, ok := last[key]
		switch {
		case !ok:
			t.Errorf("%s, %s: %s never reconciled; want spec %d", rc.c.Name(), when, key, n)
		case s.Deleted || s.Seq != n || s.Revision < floor:
			t.Errorf("%s, %s: %s last reconciled as %+v; want spec %d at revision %d or above", rc.c.Name(), when, key, s, n, floor)
		}
	}
	for key, s := range last {
		if _, ok := want[key]; ok {
			continue
		}
		if _, ok := gone[key]; !s.Deleted || (ok && s.Revision < floor) {
			t.Errorf("%s, %s: %s last reconciled as %+v; want it deleted (at revision %d or above if the cache held it at the restore)", rc.c.Name(), when, key, s, floor)
		}
	}
	for key := range gone {
		if _, ok := last[key]; !ok {
			t.Errorf("%s, %s: %s never reconciled", rc.c.Name(), when, key)
		}
	}
}

// checkCache checks that the controller's cache holds its view of want,
// each object at floor or above.
func (rc *restoreController) checkCache(t *testing.T, when string, want map[string]int, floor int64) {
	t.Helper()
	cached := map[string]int{}
	for _, obj := range rc.c.Lister().List() {
		cached[obj.Key] = obj.Value.Spec.Seq
		if obj.Revision < floor {
			t.Errorf("%s, %s: the cache holds %s at revision %d, of the old store (want %d or above)", rc.c.Name(), when, obj.Key, obj.Revision, floor)
		}
	}
	if want = rc.inView(want); !maps.Equal(cached, want) {
		t.Errorf("%s, %s: the cache holds %v; want %v", rc.c.Name(), when, cached, want)
	}
}

// checkNoStaleReconcile checks that no key was reconciled with an object
// of the old store (below floor) once it had been with one of the
// restored store.
func (rc *restoreController) checkNoStaleReconcile(t *testing.T, floor int64) {
	t.Helper()
	for key, all := range rc.log.all() {
		restored := false
		for i, s := range all {
			if s.Revision >= floor {
				restored = true
			} else if restored {
				t.Errorf("%s: %s reconciled as %+v, of the old store, after a reconcile of the restored one (reconcile %d of %v)", rc.c.Name(), key, s, i+1, all)
			}
		}
	}
}
