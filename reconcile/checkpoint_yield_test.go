package reconcile

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/checkpoint"
	"github.com/stretchr/testify/require"
)

// The write a list that changed keys makes yields to the reconciles the
// list woke: nothing is written at the list; at the next Interval the
// checkpoint holds the whole list. A list that changed nothing (an empty
// store) is written at once.
func TestAListThatChangedKeysIsWrittenAtTheNextIntervalAndOneThatDidNotAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := store.NewMemory[*item]()
		put(t, mem, "a", &item{Want: 1})
		put(t, mem, "b", &item{Want: 2})
		rev := put(t, mem, "c", &item{Want: 3})
		release := make(chan struct{})
		rec := &recorder{fn: func(ctx context.Context, _ Request[*item]) (Result, error) {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return Result{}, nil
		}}
		cp := newMemCheckpoint(nil)
		c := newCheckpointed(t, mem, rec, cp, Options[*item]{Workers: 1})
		defer runUnsynced(t, c)()
		require.NoError(t, c.WaitForSync(context.Background()))
		synctest.Wait()
		_, writes := cp.latest()
		require.Zero(t, writes, "the list was written while its keys waited")

		advance(checkpoint.DefaultInterval)
		synctest.Wait()
		st, writes := cp.latest()
		require.Equal(t, 1, writes, "the list was not written at the next Interval")
		require.Equal(t, rev, st.Revision)
		require.Len(t, st.Objects, 3)
		close(release)
	})
	synctest.Test(t, func(t *testing.T) {
		mem := store.NewMemory[*item]()
		rev := put(t, mem, "gone", &item{})
		_, err := mem.Delete(context.Background(), "gone", rev)
		require.NoError(t, err)
		cp := newMemCheckpoint(nil)
		c := newCheckpointed(t, mem, &recorder{}, cp, Options[*item]{})
		defer runUnsynced(t, c)()
		require.NoError(t, c.WaitForSync(context.Background()))
		synctest.Wait()
		st, writes := cp.latest()
		require.Equal(t, 1, writes, "a list that woke nothing was not written at once")
		require.Empty(t, st.Objects)
	})
}
