package checkpointtest

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/storetest"
)

// recorder is the suite's reconciler: it keeps each key's latest request
// and wakes waiters at each.
type recorder struct {
	mu      sync.Mutex
	last    map[string]reconcile.Request[*storetest.Value]
	changed chan struct{} // closed at the next request
}

func newRecorder() *recorder {
	return &recorder{last: map[string]reconcile.Request[*storetest.Value]{}, changed: make(chan struct{})}
}

func (r *recorder) Reconcile(_ context.Context, req reconcile.Request[*storetest.Value]) (reconcile.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last[req.Key] = req
	close(r.changed)
	r.changed = make(chan struct{})
	return reconcile.Result{}, nil
}

// latest returns each key's latest request.
func (r *recorder) latest() map[string]reconcile.Request[*storetest.Value] {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.last)
}

// waitFor waits until each key of want was last reconciled present with
// its value, or ctx ends.
func (r *recorder) waitFor(ctx context.Context, want map[string]int) error {
	for {
		r.mu.Lock()
		missing := ""
		for key, n := range want {
			if req, ok := r.last[key]; !ok || req.Deleted || req.Object.Value.N != n {
				missing = fmt.Sprintf("%s=%d", key, n)
				break
			}
		}
		changed := r.changed
		r.mu.Unlock()
		if missing == "" {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("%w: %s not reconciled", ctx.Err(), missing)
		}
	}
}

// eventually polls cond until it holds, or fails t once ctx ends.
func eventually(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("%s: %v", what, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// waitRefused waits until Health says why the checkpoint was refused, and
// checks that nothing was reconciled.
func (r *run) waitRefused(ctx context.Context, t *testing.T) {
	t.Helper()
	eventually(ctx, t, "Health never says why the checkpoint was refused", func() bool {
		h := r.ctl.Health().Checkpoint
		return h.Refused != "" || h.Active
	})
	if r.ctl.Health().Checkpoint.Active {
		t.Fatalf("a checkpoint to be refused (%v) was used", r.tc.refusal)
	}
	if got := r.ctl.Health().Checkpoint.Refused; !strings.Contains(got, r.tc.refusal.Error()) {
		t.Errorf("Health.Checkpoint.Refused = %q, want it to name %q", got, r.tc.refusal)
	}
	if last := r.rec.latest(); len(last) != 0 {
		t.Errorf("a refused checkpoint was reconciled: %v", last)
	}
}

// check checks the reconciles and Health once the later writes are
// reconciled, then waits for the checkpoint to hold the store's state.
func (r *run) check(ctx context.Context, t *testing.T) {
	t.Helper()
	objs, rev, err := r.s.List(ctx, "")
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	last := r.rec.latest()
	inStore := map[string]store.Object[*storetest.Value]{}
	for _, obj := range objs {
		inStore[obj.Key] = obj
		req, ok := last[obj.Key]
		if !ok || req.Deleted || req.Object.Value.N != obj.Value.N || req.Object.Revision != obj.Revision {
			t.Errorf("%s: the store holds %d at revision %d, last reconciled as %s", obj.Key, obj.Value.N, obj.Revision, describe(req, ok))
		}
	}
	for _, obj := range r.held.Objects {
		if _, ok := inStore[obj.Key]; ok {
			continue
		}
		req, ok := last[obj.Key]
		switch {
		case r.tc.used && (!ok || !req.Deleted || req.Object.Value == nil || req.Object.Value.N != obj.Value.N):
			t.Errorf("%s: the checkpoint held %d and the store lacks it, last reconciled as %s; want deleted with its last value", obj.Key, obj.Value.N, describe(req, ok))
		case !r.tc.used && ok:
			t.Errorf("%s: only a refused checkpoint held it, yet it was reconciled as %s", obj.Key, describe(req, ok))
		}
	}
	for key, req := range last {
		if _, ok := inStore[key]; !ok && !req.Deleted {
			t.Errorf("%s: the store lacks it, last reconciled as %s", key, describe(req, true))
		}
	}
	r.checkHealth(t)
	if r.cp != nil && !t.Failed() {
		r.waitCheckpoint(ctx, t, objs, rev)
	}
}

// checkHealth checks what Health says once the store serves.
func (r *run) checkHealth(t *testing.T) {
	t.Helper()
	h := r.ctl.Health()
	if !h.Synced || h.Checkpoint.Active {
		t.Errorf("Health: synced %v, from the checkpoint %v; want synced, not from the checkpoint", h.Synced, h.Checkpoint.Active)
	}
	want := r.sc.history
	if !r.tc.used {
		want = "" // the cache never held the checkpoint's history
	}
	switch {
	case want == "" && h.History.Changes != 0:
		t.Errorf("Health.History = %+v; want no other history", h.History)
	case want != "" && (h.History.Changes == 0 || h.History.Reason != want):
		t.Errorf("Health.History = %+v; want another history: %s", h.History, want)
	}
	if !r.tc.used && !strings.Contains(h.Checkpoint.Refused, r.tc.refusal.Error()) {
		t.Errorf("Health.Checkpoint.Refused = %q once the store serves, want it to still name %q", h.Checkpoint.Refused, r.tc.refusal)
	}
}

// waitCheckpoint waits until the checkpoint holds objs at rev.
func (r *run) waitCheckpoint(ctx context.Context, t *testing.T, objs []store.Object[*storetest.Value], rev int64) {
	t.Helper()
	eventually(ctx, t, "the checkpoint never held the store's state", func() bool {
		st, err := r.cp.Load()
		if err != nil || st.Revision != rev || len(st.Objects) != len(objs) {
			return false
		}
		for i, obj := range st.Objects {
			if obj.Key != objs[i].Key || obj.Revision != objs[i].Revision || obj.Value.N != objs[i].Value.N {
				return false
			}
		}
		return true
	})
}

// describe says what a request was.
func describe(req reconcile.Request[*storetest.Value], ok bool) string {
	switch {
	case !ok:
		return "never"
	case req.Deleted && req.Object.Value == nil:
		return "deleted without a last value"
	case req.Deleted:
		return fmt.Sprintf("deleted (last value %d)", req.Object.Value.N)
	}
	return fmt.Sprintf("%d at revision %d", req.Object.Value.N, req.Object.Revision)
}
