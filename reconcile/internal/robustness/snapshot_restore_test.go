package robustness_test

import (
	"context"
	"encoding/json"
	"maps"
	"path/filepath"
	"testing"

	"github.com/converge-go/converge/store/boltstore"
	"github.com/converge-go/converge/store/httpstore"
	"github.com/converge-go/converge/store/snapshot"
)

// userWrite is one user's write: a spec, or (Seq 0) a delete.
type userWrite struct {
	key string
	seq int
}

// The writes of the restore test: up to the snapshot (revision R1), after
// it up to R2 (updates, deletes, creates, in the view of one controller or
// of both), and to the restored store.
var (
	writesToR1 = []userWrite{
		{"app/0", 1}, {"app/1", 1}, {"app/2", 1}, {"app/3", 1}, {"app/4", 1}, {"app/5", 1},
		{"ops/0", 1}, {"ops/1", 1}, {"ops/2", 1}, {"app/0", 2},
	}
	writesToR2 = []userWrite{
		{"app/1", 7}, {"app/2", 8}, {"app/2", 9}, {"app/3", 0}, {"app/4", 0}, {"app/6", 1}, {"app/7", 1},
		{"app/8", 1}, {"app/8", 0}, {"ops/0", 9}, {"ops/1", 0}, {"ops/3", 1},
	}
	writesAfterRestore = []userWrite{
		{"app/6", 3}, {"app/1", 11}, {"app/5", 0}, {"app/9", 1}, {"ops/2", 4}, {"ops/3", 2},
	}
)

// TestARestoreFromAnOlderSnapshotIsReListedAndConvergedByEveryController:
// two controllers, of other names and prefixes, reconcile objects through
// convergestore (a process, its store a bbolt file); a snapshot is saved
// through a client at revision R1, and the writes go on (updates, deletes,
// creates) up to R2, reconciled. The server is then killed and started on
// the same address with -restore-from the snapshot, on a new file. Each
// controller re-lists the restored store once (another identity) and
// converges to it: the keys created after R1 are reconciled as deleted,
// those updated after it back to their values at R1, those deleted after
// it as present again, and no key is reconciled with an object of the old
// store once it has been with one of the restored store. A
// WaitForRevision(R2) begun as the restored store serves returns only once
// the controller's cache is the restored store and every key of it is
// reconciled, whether it began before the controller's cache re-listed
// (one controller's Lists and Watches are held until its wait has begun)
// or after (the other's reconciles of the restored store are held until
// its wait has begun).
// The writes made to the restored store afterwards are reconciled, none
// skipped.
func TestARestoreFromAnOlderSnapshotIsReListedAndConvergedByEveryController(t *testing.T) {
	srv := startStoreServer(t)
	ctx, cancel := context.WithTimeout(t.Context(), procPatience)
	defer cancel()
	cl := storeClient[*seqObject](t, srv)
	u := userClient{s: cl, srv: srv}
	app := runRestoreController(t, "restore-app", worldPrefix, newHeldStore(storeClient[*seqObject](t, srv)))
	all := runRestoreController(t, "restore-all", "", newHeldStore(storeClient[*seqObject](t, srv)))
	both := []*restoreController{app, all}
	waitBoth := func(when string, rev int64) {
		t.Helper()
		for _, rc := range both {
			if err := rc.c.WaitForRevision(ctx, rev); err != nil {
				t.Fatalf("%s, %s: WaitForRevision(%d): %v (health %+v)", rc.c.Name(), when, rev, err, rc.c.Health())
			}
		}
	}

	state := map[string]int{}
	r1 := applyWrites(t, ctx, u, state, writesToR1)
	atR1 := maps.Clone(state)
	file := filepath.Join(t.TempDir(), "r1.snap")
	info, err := snapshot.WriteFile(ctx, file, snapshot.Typed(storeClient[json.RawMessage](t, srv), nil))
	if err != nil || info.Revision != r1 || info.Count != len(atR1) {
		t.Fatalf("snapshot at revision %d: %+v, %v; want revision %d, %d objects", r1, info, err, r1, len(atR1))
	}
	r2 := applyWrites(t, ctx, u, state, writesToR2)
	waitBoth("before the restore", r2)
	atR2 := maps.Clone(state)
	for _, rc := range both {
		rc.checkReconciled(t, "before the restore", state, 0, nil)
	}

	floor := r1 + boltstore.DefaultRevisionBump // the restored store's objects' revision
	app.held.hold()
	all.log.holdFrom(floor)
	if err := srv.restoreFrom(file); err != nil {
		t.Fatal(err)
	}
	checkServesTheRestore(t, ctx, cl, info, floor)
	waitAcrossTheRestore(t, ctx, app, all, r2, atR1, atR2, state, floor)
	waitBoth("after the restore", floor)
	for _, rc := range both {
		rc.checkReconciled(t, "after the restore", atR1, floor, atR2)
		rc.checkCache(t, "after the restore", atR1, floor)
		if n := rc.relists(); n != 1 {
			t.Errorf("%s re-listed a store of another identity %d times; want once", rc.c.Name(), n)
		}
		if h := rc.c.Health(); h.Revision < floor {
			t.Errorf("%s's cache reflects revision %d; want the restored store's %d or above", rc.c.Name(), h.Revision, floor)
		}
	}

	state = maps.Clone(atR1)
	r3 := applyWrites(t, ctx, u, state, writesAfterRestore)
	waitBoth("after the writes to the restored store", r3)
	for _, rc := range both {
		rc.checkReconciled(t, "after the writes to the restored store", state, floor, atR2)
		rc.checkCache(t, "after the writes to the restored store", state, floor)
		rc.checkNoStaleReconcile(t, floor)
	}
	t.Logf("snapshot at revision %d, old store at %d, restored at %d, then at %d; %d reconciles of app/, %d of the whole store",
		r1, r2, floor, r3, reconciles(app), reconciles(all))
}

// checkServesTheRestore checks that the store cl serves is the one restored from
// the snapshot info describes: at its revision plus the bump, floor, under
// another identity.
func checkServesTheRestore(t *testing.T, ctx context.Context, cl *httpstore.Client[*seqObject], info snapshot.Info, floor int64) {
	t.Helper()
	if rev, err := cl.Revision(ctx); err != nil || rev != floor {
		t.Fatalf("the restored store at revision %d (%v); want the snapshot's %d plus the bump, %d", rev, err, info.Revision, floor)
	}
	if id, err := cl.Identity(ctx); err != nil || id == info.Identity {
		t.Fatalf("the restored store's identity %q (%v), the snapshot's %q: want another", id, err, info.Identity)
	}
}

// waitAcrossTheRestore begins a WaitForRevision(r2) of each controller
// once the restored store serves: all's after its cache re-listed it,
// while its reconciles of the restored objects (at floor) are held until
// the wait has begun; app's while its cache is still the old store's
// (state, at r2), its Lists and Watches held until the wait has begun.
// Each returns only once its cache holds atR1, at floor, and its
// reconciles were of it: atR2's other keys reconciled as deleted.
func waitAcrossTheRestore(t *testing.T, ctx context.Context, app, all *restoreController, r2 int64, atR1, atR2, state map[string]int, floor int64) {
	t.Helper()
	if err := poll(ctx, func() bool { return all.c.Health().Revision >= floor }); err != nil {
		t.Fatalf("%s's cache never re-listed the restored store: %v (health %+v)", all.c.Name(), err, all.c.Health())
	}
	allWaited := all.waitAcross(t, ctx, r2, atR1, floor, atR2)
	await(t, ctx, all.held.asked, all.c.Name()+"'s WaitForRevision never read the store's identity")
	all.log.release()

	await(t, ctx, app.held.waiting, app.c.Name()+" never tried to list or watch the restored store")
	app.checkCache(t, "its store held", state, 0)
	appWaited := app.waitAcross(t, ctx, r2, atR1, floor, atR2)
	await(t, ctx, app.held.asked, app.c.Name()+"'s WaitForRevision never read the store's identity")
	app.checkCache(t, "its wait begun, its store held", state, 0)
	app.held.release()
	for rc, waited := range map[*restoreController]<-chan error{app: appWaited, all: allWaited} {
		if err := <-waited; err != nil {
			t.Fatalf("%s: WaitForRevision(%d) across the restore: %v", rc.c.Name(), r2, err)
		}
	}
}

// await waits for a signal on ch, or fails t with msg if ctx ends first.
func await(t *testing.T, ctx context.Context, ch <-chan struct{}, msg string) {
	t.Helper()
	select {
	case <-ch:
	case <-ctx.Done():
		t.Fatal(msg)
	}
}

// applyWrites makes writes through u in order, keeps state (each key's
// spec) up to date, and returns the store's revision after the last.
func applyWrites(t *testing.T, ctx context.Context, u userClient, state map[string]int, writes []userWrite) int64 {
	t.Helper()
	for _, w := range writes {
		if w.seq == 0 {
			if _, err := u.remove(ctx, w.key); err != nil {
				t.Fatalf("deleting %s: %v", w.key, err)
			}
			delete(state, w.key)
			continue
		}
		if err := u.put(ctx, w.key, w.seq); err != nil {
			t.Fatalf("writing %s: %v", w.key, err)
		}
		state[w.key] = w.seq
	}
	rev, err := u.s.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

// reconciles counts the reconciles rc's reconciler was handed.
func reconciles(rc *restoreController) int {
	n := 0
	for _, s := range rc.log.all() {
		n += len(s)
	}
	return n
}
