package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

// progressCase is a store whose watches answer progress requests, and a
// way to make values for it.
type progressCase[V any] struct {
	open  func(t *testing.T) store.Store[V]
	value func(i int) V
}

// requester returns w's ProgressRequester, failing the test without one.
func requester[V any](t *testing.T, w store.Watcher[V]) store.ProgressRequester {
	t.Helper()
	pr, ok := w.(store.ProgressRequester)
	require.True(t, ok, "%T does not implement store.ProgressRequester", w)
	return pr
}

// nextProgress reads events until a Progress event and returns the changes
// read before it and the Progress revision.
func nextProgress[V any](t *testing.T, w store.Watcher[V]) (changes []store.Event[V], rev int64) {
	t.Helper()
	for ev := range w.Events() {
		if ev.Type == store.Progress {
			require.Empty(t, ev.Object.Key, "a Progress event has no key")
			return changes, ev.Object.Revision
		}
		changes = append(changes, ev)
	}
	t.Fatalf("watch ended before a Progress event: %v", w.Err())
	return nil, 0
}

func runProgressTests[V any](t *testing.T, c progressCase[V]) {
	ctx := context.Background()

	t.Run("ProgressFollowsEveryChangeUpToTheStoreRevisionAtTheRequest", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := c.open(t)
			var want []int64
			for i := range 5 {
				obj, err := s.Create(ctx, fmt.Sprintf("a/%d", i), c.value(i))
				require.NoError(t, err)
				want = append(want, obj.Revision)
				_, err = s.Create(ctx, fmt.Sprintf("b/%d", i), c.value(i)) // outside the prefix
				require.NoError(t, err)
			}
			w, err := s.Watch(ctx, "a/", 0)
			require.NoError(t, err)
			defer w.Stop()
			atRequest, err := s.Revision(ctx)
			require.NoError(t, err)
			require.NoError(t, requester(t, w).RequestProgress(ctx))
			changes, rev := nextProgress(t, w)
			require.GreaterOrEqual(t, rev, atRequest)
			var got []int64
			for _, ev := range changes {
				got = append(got, ev.Object.Revision)
			}
			require.Equal(t, want, got, "every change up to R comes before the Progress event")
		})
	})

	t.Run("AWatchThatSawNoChangesStillAnswers", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := c.open(t)
			w, err := s.Watch(ctx, "quiet/", 0)
			require.NoError(t, err)
			defer w.Stop()
			require.NoError(t, requester(t, w).RequestProgress(ctx))
			changes, rev := nextProgress(t, w)
			require.Empty(t, changes)
			require.GreaterOrEqual(t, rev, int64(0))
			for i := range 3 {
				_, err := s.Create(ctx, fmt.Sprintf("loud/%d", i), c.value(i))
				require.NoError(t, err)
			}
			atRequest, err := s.Revision(ctx)
			require.NoError(t, err)
			require.NoError(t, requester(t, w).RequestProgress(ctx))
			changes, rev = nextProgress(t, w)
			require.Empty(t, changes)
			require.GreaterOrEqual(t, rev, atRequest)
		})
	})

	t.Run("AWatchFromTheFutureAnswers", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := c.open(t)
			_, err := s.Create(ctx, "a/0", c.value(0))
			require.NoError(t, err)
			w, err := s.Watch(ctx, "a/", 1000)
			require.NoError(t, err)
			defer w.Stop()
			require.NoError(t, requester(t, w).RequestProgress(ctx))
			changes, rev := nextProgress(t, w)
			require.Empty(t, changes)
			require.GreaterOrEqual(t, rev, int64(1))
		})
	})

	// Requests made while the watch is still sending earlier events are
	// answered by one Progress event, after all of them.
	t.Run("PendingRequestsCoalesceIntoOneAnswerAfterTheBacklog", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := c.open(t)
			w, err := s.Watch(ctx, "a/", 0)
			require.NoError(t, err)
			defer w.Stop()
			const n = 300 // more than a watch buffers: the watch blocks sending
			for i := range n {
				_, err := s.Create(ctx, fmt.Sprintf("a/%d", i), c.value(i))
				require.NoError(t, err)
			}
			synctest.Wait()
			for range 3 {
				require.NoError(t, requester(t, w).RequestProgress(ctx))
			}
			changes, rev := nextProgress(t, w)
			require.Len(t, changes, n)
			require.GreaterOrEqual(t, rev, int64(n))
			synctest.Wait()
			select {
			case ev := <-w.Events():
				t.Fatalf("a second answer to coalesced requests: %+v", ev)
			default:
			}
		})
	})

	// Under concurrent writes inside and outside the prefix, every Progress
	// event R comes after every change ≤ R under the prefix, and R is at
	// least the store's revision when it was asked for.
	t.Run("ProgressUnderInterleavedWritesComesAfterEveryEarlierChange", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := c.open(t)
			w, err := s.Watch(ctx, "a/", 0)
			require.NoError(t, err)
			defer w.Stop()
			var mu sync.Mutex
			written := map[int64]string{} // revision → key, prefix a/ only
			var writers sync.WaitGroup
			for wr := range 3 {
				writers.Go(func() {
					for i := range 100 {
						prefix := "a/"
						if i%3 == 0 {
							prefix = "b/"
						}
						key := fmt.Sprintf("%s%d-%d", prefix, wr, i)
						obj, err := s.Create(ctx, key, c.value(i))
						if err != nil {
							t.Errorf("create %s: %v", key, err)
							return
						}
						if prefix == "a/" {
							mu.Lock()
							written[obj.Revision] = key
							mu.Unlock()
						}
					}
				})
			}
			type answer struct {
				rev    int64
				seenBy map[int64]bool // revisions of the changes received before
				asked  int64          // store revision before the request
			}
			seen := map[int64]bool{}
			var answers []answer
			for range 20 {
				asked, err := s.Revision(ctx)
				require.NoError(t, err)
				require.NoError(t, requester(t, w).RequestProgress(ctx))
				changes, rev := nextProgress(t, w)
				for _, ev := range changes {
					require.False(t, seen[ev.Object.Revision], "change at %d delivered twice", ev.Object.Revision)
					seen[ev.Object.Revision] = true
				}
				snapshot := make(map[int64]bool, len(seen))
				for r := range seen {
					snapshot[r] = true
				}
				answers = append(answers, answer{rev: rev, seenBy: snapshot, asked: asked})
			}
			writers.Wait()
			for _, a := range answers {
				require.GreaterOrEqual(t, a.rev, a.asked, "Progress below the store's revision at the request")
				for rev, key := range written {
					if rev <= a.rev {
						require.True(t, a.seenBy[rev], "Progress %d came before the change of %s at %d", a.rev, key, rev)
					}
				}
			}
		})
	})

	t.Run("RequestsAreRefusedOnlyWhenTheyCannotBeMade", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := c.open(t)
			w, err := s.Watch(ctx, "a/", 0)
			require.NoError(t, err)
			pr := requester(t, w)
			var nilCtx context.Context
			require.ErrorIs(t, pr.RequestProgress(nilCtx), store.ErrInvalid)
			cancelled, cancel := context.WithCancel(ctx)
			cancel()
			require.ErrorIs(t, pr.RequestProgress(cancelled), context.Canceled)
			w.Stop()
			require.ErrorIs(t, pr.RequestProgress(ctx), store.ErrUnavailable, "the watch has ended")
		})
	})
}

// A memory store's watch answers progress requests after every change they
// cover (the clauses of runProgressTests).
func TestMemoryWatchAnswersProgressRequestsAfterTheChangesTheyCover(t *testing.T) {
	runProgressTests(t, progressCase[*item]{
		open: func(t *testing.T) store.Store[*item] {
			m := store.NewMemory[*item](store.WithWatchLag(100000))
			t.Cleanup(func() { m.Close() })
			return m
		},
		value: func(i int) *item { return &item{N: i} },
	})
}

func TestMemoryProgressRequestAfterCloseIsUnavailable(t *testing.T) {
	ctx := context.Background()
	m := store.NewMemory[*item]()
	w, err := m.Watch(ctx, "", 0)
	require.NoError(t, err)
	require.NoError(t, m.Close())
	require.ErrorIs(t, requester(t, w).RequestProgress(ctx), store.ErrUnavailable)
}

// TestMemoryProgressRequestsForTheSameRevisionAreEachAnswered: requests
// made back to back with no write in between (each for the same revision,
// one arriving while the answer to the previous is being sent) each get
// a Progress event; a lost one would leave the bubble deadlocked.
func TestMemoryProgressRequestsForTheSameRevisionAreEachAnswered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := store.NewMemory[int]()
		defer s.Close()
		_, err := s.Create(context.Background(), "a/x", 1)
		require.NoError(t, err)
		w, err := s.Watch(context.Background(), "a/", 0)
		require.NoError(t, err)
		defer w.Stop()
		pr := requester(t, w)
		for range 3000 {
			require.NoError(t, pr.RequestProgress(context.Background()))
			_, rev := nextProgress(t, w)
			require.Equal(t, int64(1), rev)
		}
	})
}
