package store_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/storetest"
)

// TestAWatcherCatchingUpInPagesSeesEveryRevisionItClaimsWhateverTheWrites
// is a model of WatchCatchingUp over a Memory store that gives its
// catch-ups a few events a page: random creates, updates and deletes go on
// while the watcher is read now and then, so it lags, catches up page by
// page with writes between the pages, and follows the store's watch again.
// Every event is in revision order and carries its key's state at its
// revision, an Updated one only for a key the reader holds, and every
// Progress event at R finds the reader's view equal to the store's state
// at R: a catch-up ends only at a revision whose every change it has
// delivered, even though its pages are not one snapshot.
func TestAWatcherCatchingUpInPagesSeesEveryRevisionItClaimsWhateverTheWrites(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 4141))
			s := store.NewMemory[int](store.WithHistory(16), store.WithWatchLag(4),
				store.WithOrderFrom(int(seed%2)*10), store.WithDiffPage(1+int(seed%5)))
			defer s.Close()
			prefix := []string{"", "a/"}[seed%2]
			checkPagedCatchUp(t, rng, s, prefix)
		})
	}
}

// pagedReader is the reader's view of a watch, checked against the model
// at each event.
type pagedReader struct {
	t      *testing.T
	m      *diffModel
	prefix string
	view   map[string]store.Object[int]
	last   int64 // revision of the last change read
	proven int64 // revision of the last Progress read
}

func checkPagedCatchUp(t *testing.T, rng *rand.Rand, s *store.Memory[int], prefix string) {
	ctx := t.Context()
	m := &diffModel{states: []map[string]store.Object[int]{{}}}
	w, err := store.WatchCatchingUp(ctx, s, prefix, 0)
	require.NoError(t, err)
	defer w.Stop()
	pr, ok := w.(store.ProgressRequester)
	require.True(t, ok)
	r := &pagedReader{t: t, m: m, prefix: prefix, view: map[string]store.Object[int]{}}
	for step := range 3000 {
		key := fmt.Sprintf("%s/%d", []string{"a", "b"}[rng.IntN(2)], rng.IntN(40))
		m.writeRandomly(t, rng, s, key, step, 4)
		if rng.IntN(60) == 0 {
			require.NoError(t, pr.RequestProgress(ctx))
		}
		if rng.IntN(25) == 0 { // 25 writes between reads, on average: more than the history holds
			r.drain(w, rng.IntN(60))
		}
	}
	final := int64(len(m.states) - 1)
	for r.proven < final {
		require.NoError(t, pr.RequestProgress(ctx))
		for proven := r.proven; r.proven == proven; {
			r.read(storetest.NextEvent(t, w))
		}
	}
	require.Equal(t, r.under(m.now()), r.view)
}

// drain reads at most n events that are ready, without waiting.
func (r *pagedReader) drain(w store.Watcher[int], n int) {
	for range n {
		select {
		case ev, ok := <-w.Events():
			require.True(r.t, ok, "watch ended: %v", w.Err())
			r.read(ev)
		default:
			return
		}
	}
}

// read checks ev against the model and applies it to the view.
func (r *pagedReader) read(ev store.Event[int]) {
	t, rev, key := r.t, ev.Object.Revision, ev.Object.Key
	if ev.Type == store.Progress {
		require.Equal(t, r.under(r.m.states[rev]), r.view, "the view at Progress %d", rev)
		r.proven = rev
		return
	}
	require.Greater(t, rev, r.last, "events in revision order")
	r.last = rev
	require.True(t, strings.HasPrefix(key, r.prefix), key)
	if ev.Type == store.Deleted {
		_, live := r.m.states[rev][key]
		_, was := r.m.states[rev-1][key]
		require.True(t, was && !live, "%s deleted at %d", key, rev)
		delete(r.view, key)
		return
	}
	require.Equal(t, r.m.states[rev][key], ev.Object, "%s at %d", key, rev)
	if ev.Type == store.Updated {
		require.Contains(t, r.view, key, "an update of a key never seen")
	}
	r.view[key] = ev.Object
}

// under returns the part of state under the reader's prefix.
func (r *pagedReader) under(state map[string]store.Object[int]) map[string]store.Object[int] {
	out := maps.Clone(state)
	maps.DeleteFunc(out, func(k string, _ store.Object[int]) bool { return !strings.HasPrefix(k, r.prefix) })
	return out
}

// TestStopEndsAWatcherStoppedInTheMiddleOfACatchUp: a watcher stopped
// while it hands out a catch-up's events, from a revision its store's
// history no longer holds, ends: Stop returns and Err is nil (it used to
// go round between a Diff it could not hand out and a watch the history
// refused, and Stop waited for ever).
func TestStopEndsAWatcherStoppedInTheMiddleOfACatchUp(t *testing.T) {
	for _, page := range []int{1, 4096} {
		t.Run(fmt.Sprint(page), func(t *testing.T) {
			ctx := t.Context()
			s := store.NewMemory[int](store.WithHistory(16), store.WithWatchLag(4),
				store.WithOrderFrom(0), store.WithDiffPage(page))
			defer s.Close()
			w, err := store.WatchCatchingUp(ctx, s, "", 0)
			require.NoError(t, err)
			for i := range 100 {
				_, err := s.Create(ctx, fmt.Sprint(i), i)
				require.NoError(t, err)
			}
			for range 2 {
				storetest.NextEvent(t, w)
			}
			stopped := make(chan struct{})
			go func() {
				w.Stop()
				close(stopped)
			}()
			select {
			case <-stopped:
			case <-time.After(storetest.Patience):
				t.Fatalf("Stop did not return within %v", storetest.Patience)
			}
			require.NoError(t, storetest.WatchEnded(t, w))
		})
	}
}
