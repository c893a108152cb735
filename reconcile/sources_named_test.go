package reconcile

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/store"
)

// failingSource wakes nothing and reports err.
type failingSource struct{ err error }

func (f failingSource) Start(ctx context.Context, _ func(string)) error {
	<-ctx.Done()
	return nil
}

func (f failingSource) Err() error { return f.err }

// TestANamedSourceIsShownByItsNameWhateverItIs: a channel source, a store
// source and a source that reports an error, each given a name with
// Named, are shown by it in the triggers of the keys they wake and in
// Health.Degraded, and still do what they did: the store source maps its
// store's changes, the failing one is degraded.
func TestANamedSourceIsShownByItsNameWhateverItIs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := store.NewMemory[*item]()
		put(t, s, "a", &item{})
		put(t, s, "b", &item{})
		other := store.NewMemory[*item]()
		events := make(chan string, 1)
		toOwner := func(old, cur *store.Object[*item]) []string {
			if cur != nil {
				return []string{cur.Value.Owner}
			}
			return nil
		}
		rec := &recorder{}
		c, err := New(s, rec, Options[*item]{Name: "named", Sources: []Source{
			Named("process exits", FromChannel(events)),
			Named("pods", FromStore(other, "", toOwner)),
			Named("probe", failingSource{err: errors.New("no answer")}),
		}})
		require.NoError(t, err)
		stop := start(t, c)
		defer stop()
		synctest.Wait()

		events <- "a"
		synctest.Wait()
		require.Equal(t, []string{"source process exits"}, snapshotOf(c, "a").LastTriggers)
		put(t, other, "pod", &item{Owner: "b"})
		synctest.Wait()
		require.Equal(t, []string{"source pods"}, snapshotOf(c, "b").LastTriggers)
		require.Equal(t, []string{`source "probe": no answer`}, c.Health().Degraded)
	})
}
