package reconcile

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/internal/syncbuf"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/checkpoint"
	"github.com/converge-go/converge/store/faultstore"
	"github.com/stretchr/testify/require"
)

const cpHeartbeat = time.Second // StartAfter is three of them

// newCheckpointed returns a controller of s with cp as its checkpoint.
func newCheckpointed(t *testing.T, s store.Store[*item], rec Reconciler[*item], cp checkpoint.Store[*item], opts Options[*item]) *Controller[*item] {
	t.Helper()
	opts.Name = "cp"
	opts.HeartbeatInterval = cpHeartbeat
	opts.Checkpoint.Store = cp
	c, err := New(s, rec, opts)
	require.NoError(t, err)
	return c
}

// abc is a store holding a=1, b=2, c=3 and its checkpoint, seen a minute
// ago.
func abc(t *testing.T) (*store.Memory[*item], *memCheckpoint, int64) {
	t.Helper()
	mem := store.NewMemory[*item]()
	put(t, mem, "a", &item{Want: 1})
	put(t, mem, "b", &item{Want: 2})
	rev := put(t, mem, "c", &item{Want: 3})
	return mem, newMemCheckpoint(checkpointOf(t, mem, time.Now().Add(-time.Minute))), rev
}

// A controller started while its store is unreachable (every kind of
// outage) reconciles its checkpoint's objects once it has failed to list
// the store for StartAfter, and not before, and says so: Health's
// Checkpoint is active at the checkpoint's revision and age, the store
// degraded, the cache not synced, Ready failing with ErrDegraded.
func TestAControllerStartedWithoutItsStoreReconcilesItsCheckpoint(t *testing.T) {
	for _, outage := range []faultstore.Outage{faultstore.Loud, faultstore.Silent, faultstore.SilentHang} {
		t.Run(outage.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem, cp, rev := abc(t)
				fs := faulty(t, mem)
				fs.SetOutage(outage)
				rec := &recorder{}
				c := newCheckpointed(t, fs, rec, cp, Options[*item]{Workers: 2})
				defer runUnsynced(t, c)()
				advance(3*cpHeartbeat - time.Millisecond)
				synctest.Wait()
				require.Empty(t, rec.keysReconciled(), "reconciled before StartAfter")
				advance(time.Millisecond)
				synctest.Wait()
				for key, want := range map[string]int{"a": 1, "b": 2, "c": 3} {
					req, ok := rec.last(key)
					require.True(t, ok, "%s not reconciled from the checkpoint", key)
					require.False(t, req.Deleted)
					require.Equal(t, want, req.Object.Value.Want)
				}
				h := c.Health()
				require.True(t, h.Checkpoint.Enabled)
				require.True(t, h.Checkpoint.Active, "Health does not say the controller runs from its checkpoint")
				require.Equal(t, rev, h.Checkpoint.Revision)
				require.Equal(t, time.Minute+3*cpHeartbeat, h.Checkpoint.Age)
				require.False(t, h.Synced)
				require.NotEmpty(t, h.Degraded)
				err := c.Ready()
				require.ErrorIs(t, err, ErrDegraded)
				require.Contains(t, err.Error(), "checkpoint of revision 3")
				fs.SetOutage(faultstore.Up)
			})
		})
	}
}

// While the controller runs from its checkpoint, a key the checkpoint
// lacks, woken by Enqueue or a source, is not reconciled (never as
// deleted): it is handed out, found in neither the cache nor the
// checkpoint, and shown as awaiting_store. Once the store serves and the
// cache has caught up, it is reconciled as the store has it: deleted if
// the store lacks it too, present if it was created meanwhile.
func TestAKeyTheCheckpointLacksIsNotReconciledAsDeletedUntilTheStoreIsBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, cp, _ := abc(t)
		fs := faulty(t, mem)
		fs.SetOutage(faultstore.Silent)
		wake := make(chan string, 2)
		rec := &recorder{}
		c := newCheckpointed(t, fs, rec, cp, Options[*item]{Sources: []Source{FromChannel(wake)}})
		defer runUnsynced(t, c)()
		advance(3 * cpHeartbeat)
		synctest.Wait()
		require.True(t, c.Health().Checkpoint.Active)

		created := put(t, mem, "made-meanwhile", &item{Want: 7}) // the store has it; the checkpoint does not
		require.NoError(t, c.Enqueue("gone"))
		wake <- "made-meanwhile"
		for range 5 {
			advance(cpHeartbeat)
			synctest.Wait()
		}
		require.Zero(t, rec.count("gone"), "a key the checkpoint lacks was reconciled")
		require.Zero(t, rec.count("made-meanwhile"), "a key the checkpoint lacks was reconciled")
		ks := keyState(t, c, "gone")
		require.Equal(t, AwaitingStore, ks.LastOutcome)

		fs.SetOutage(faultstore.Up)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		require.NoError(t, c.WaitForSync(ctx))
		require.NoError(t, c.WaitForRevision(ctx, created))
		synctest.Wait()
		req, ok := rec.last("gone")
		require.True(t, ok, "the key that waited was not reconciled once the store was back")
		require.True(t, req.Deleted, "the store lacks it too: it is deleted")
		req, ok = rec.last("made-meanwhile")
		require.True(t, ok)
		require.False(t, req.Deleted)
		require.Equal(t, 7, req.Object.Value.Want)
		require.Zero(t, rec.deletedRequests("made-meanwhile"), "a key the store holds was reconciled as deleted")
		require.False(t, c.Health().Checkpoint.Active)
	})
}

// When the store serves again the cache resumes its watch after the
// checkpoint's revision, or re-lists if that history was compacted:
// exactly the keys changed meanwhile (updated, deleted with its last
// value, created) are reconciled, the others not, the cache is synced, and
// the checkpoint is written at the store's revision.
func TestTheStoreBackReconcilesExactlyTheKeysChangedMeanwhile(t *testing.T) {
	for _, compacted := range []bool{false, true} {
		name := map[bool]string{false: "resumed", true: "compacted"}[compacted]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem, _, _ := abc(t)
				put(t, mem, "d", &item{Want: 4})
				cp := newMemCheckpoint(checkpointOf(t, mem, time.Now().Add(-time.Minute)))
				fs := faulty(t, mem)
				fs.SetOutage(faultstore.Loud)
				counted := &listCounter{Store: fs}
				rec := &recorder{}
				c := newCheckpointed(t, counted, rec, cp, Options[*item]{})
				defer runUnsynced(t, c)()
				advance(3 * cpHeartbeat)
				synctest.Wait()
				require.Len(t, rec.keysReconciled(), 4)
				rec.reset()

				put(t, mem, "b", &item{Want: 20})
				del(t, mem, "c")
				rev := put(t, mem, "e", &item{Want: 5})
				if compacted {
					require.NoError(t, mem.Compact(context.Background(), rev))
				}
				lists := counted.lists()
				fs.SetOutage(faultstore.Up)
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				require.NoError(t, c.WaitForRevision(ctx, rev))
				advance(10 * cpHeartbeat)
				synctest.Wait()
				require.Equal(t, []string{"b", "c", "e"}, rec.keysReconciled(), "not exactly the keys changed meanwhile")
				req, _ := rec.last("c")
				require.True(t, req.Deleted)
				require.Equal(t, 3, req.Object.Value.Want, "the deletion lacks the last value")
				if compacted {
					require.Greater(t, counted.lists(), lists, "a compacted history was not re-listed")
				} else {
					require.Equal(t, lists, counted.lists(), "the watch was not resumed after the checkpoint's revision")
				}
				h := c.Health()
				require.True(t, h.Synced)
				require.False(t, h.Checkpoint.Active)
				st, _ := cp.latest()
				require.Equal(t, rev, st.Revision, "the checkpoint was not kept current")
				require.Equal(t, rev, h.Checkpoint.Revision)
				now, _, err := mem.List(context.Background(), "")
				require.NoError(t, err)
				require.Equal(t, objectsOf(checkpoint.State[*item]{Objects: now}), objectsOf(st))
			})
		})
	}
}

// A checkpoint older than MaxAge, or of another prefix, or one the store
// (answering for its identity, though not for a list) says is another
// store's, is refused: nothing is reconciled, Health says why, and the
// controller syncs from its store once it serves.
func TestACheckpointPastItsMaximumAgeIsRefused(t *testing.T) {
	cases := []struct {
		name, why string
		edit      func(st *checkpoint.State[*item])
	}{
		{"too old", "past MaxAge", func(st *checkpoint.State[*item]) { st.Seen = time.Now().Add(-2 * time.Hour) }},
		{"another prefix", "of prefix", func(st *checkpoint.State[*item]) { st.Prefix = "other/" }},
		{"another store", "of another store", func(st *checkpoint.State[*item]) { st.Identity = "memory:another" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem, _, _ := abc(t)
				st := checkpointOf(t, mem, time.Now().Add(-time.Minute))
				tc.edit(st)
				fs := faulty(t, mem)
				// Only lists and watches fail: the store answers for its
				// identity.
				fs.SetPlan(func(call faultstore.Call) faultstore.Decision {
					if call.Op&(faultstore.OpList|faultstore.OpWatch) != 0 {
						return faultstore.Decision{Fault: faultstore.Fail}
					}
					return faultstore.Decision{}
				})
				rec := &recorder{}
				c := newCheckpointed(t, fs, rec, newMemCheckpoint(st), Options[*item]{Checkpoint: checkpoint.Options[*item]{MaxAge: time.Hour}})
				defer runUnsynced(t, c)()
				advance(10 * cpHeartbeat)
				synctest.Wait()
				require.Empty(t, rec.keysReconciled(), "a refused checkpoint was reconciled")
				h := c.Health()
				require.False(t, h.Checkpoint.Active)
				require.Contains(t, h.Checkpoint.Refused, tc.why)
				require.ErrorIs(t, c.Ready(), ErrNotSynced)

				fs.SetPlan(nil)
				require.NoError(t, c.WaitForSync(context.Background()))
				synctest.Wait()
				require.Equal(t, []string{"a", "b", "c"}, rec.keysReconciled())
			})
		})
	}
}

// A damaged checkpoint is never used: the controller logs it as an error,
// counts it (Health.Checkpoint.Damaged), says why it refused it, waits for
// its store, and then writes a whole new checkpoint, within one Interval.
func TestADamagedCheckpointIsIgnoredLoggedAndCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, cp, rev := abc(t)
		cp.damaged = true
		fs := faulty(t, mem)
		fs.SetOutage(faultstore.Loud)
		var logs syncbuf.Buffer
		rec := &recorder{}
		c := newCheckpointed(t, fs, rec, cp, Options[*item]{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		defer runUnsynced(t, c)()
		advance(10 * cpHeartbeat)
		synctest.Wait()
		require.Empty(t, rec.keysReconciled(), "a damaged checkpoint was reconciled")
		h := c.Health()
		require.Equal(t, int64(1), h.Checkpoint.Damaged)
		require.Contains(t, h.Checkpoint.Refused, "damaged")
		require.Contains(t, logs.String(), `level=ERROR msg="checkpoint damaged; ignored"`, "the damage was not logged")

		fs.SetOutage(faultstore.Up)
		require.NoError(t, c.WaitForSync(context.Background()))
		advance(checkpoint.DefaultInterval)
		synctest.Wait()
		st, err := cp.Load()
		require.NoError(t, err, "the damaged checkpoint was not rewritten")
		require.Equal(t, rev, st.Revision)
		require.Len(t, st.Objects, 3)
	})
}

// listCounter counts the Lists of the store it wraps, which it is in
// every other way (its identity included).
type listCounter struct {
	store.Store[*item]
	mu sync.Mutex
	n  int
}

func (l *listCounter) List(ctx context.Context, prefix string) ([]store.Object[*item], int64, error) {
	l.mu.Lock()
	l.n++
	l.mu.Unlock()
	return l.Store.List(ctx, prefix)
}

func (l *listCounter) Identity(ctx context.Context) (string, error) {
	return l.Store.(store.Identifier).Identity(ctx)
}

func (l *listCounter) lists() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

// objectsOf returns st's objects by key.
func objectsOf(st checkpoint.State[*item]) map[string]store.Object[*item] {
	out := map[string]store.Object[*item]{}
	for _, obj := range st.Objects {
		out[obj.Key] = obj
	}
	return out
}
