package queue_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/queue"
)

func keysOf(hs []queue.Handout[string]) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.Key
	}
	return out
}

// GetBatch takes the ready keys up to max in hand-out order; each is
// processing until its own Done: a key added while processing is not
// handed out again (to this batch or another) before its Done.
func TestGetBatchHandsOutReadyKeysUpToMaxEachProcessingUntilItsDone(t *testing.T) {
	q := queue.New(queue.Options[string]{})
	ctx := context.Background()
	for _, k := range []string{"a", "b", "c", "d"} {
		q.Add(k)
	}
	q.AddWith("e", queue.AddOptions{Priority: queue.PriorityHigh, Tags: 4})
	got, err := q.GetBatch(ctx, 3, nil)
	require.NoError(t, err)
	require.Equal(t, []string{"e", "a", "b"}, keysOf(got))
	require.Equal(t, uint32(4), got[0].Tags)
	q.Add("a") // processing: dirty, not ready
	got, err = q.GetBatch(ctx, 10, got[:0])
	require.NoError(t, err)
	require.Equal(t, []string{"c", "d"}, keysOf(got))
	require.Equal(t, 0, q.View().Len())
	q.Done("a")
	got, err = q.GetBatch(ctx, 10, got[:0])
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, keysOf(got), "a is handed out again after its Done")
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		q.Done(k)
	}
	require.Empty(t, q.View().Processing())
}

// GetBatch blocks until a key is ready, then returns what is ready then.
func TestGetBatchBlocksUntilAKeyIsReady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := queue.New(queue.Options[string]{})
		done := make(chan []queue.Handout[string])
		go func() {
			got, err := q.GetBatch(context.Background(), 5, nil)
			if err != nil {
				panic(err)
			}
			done <- got
		}()
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("GetBatch returned with nothing ready")
		default:
		}
		q.Add("x")
		require.Equal(t, []string{"x"}, keysOf(<-done))
	})
}

// Bad arguments and the end of the queue are errors, not panics or hangs.
func TestGetBatchRefusesBadInputAndEndsWithTheQueue(t *testing.T) {
	q := queue.New(queue.Options[string]{})
	_, err := q.GetBatch(context.Background(), 0, nil)
	require.ErrorIs(t, err, queue.ErrInvalid)
	//lint:ignore SA1012 a nil context is the bad input under test
	_, err = q.GetBatch(nil, 1, nil) //nolint:staticcheck
	require.ErrorIs(t, err, queue.ErrInvalid)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = q.GetBatch(ctx, 2, nil)
	require.ErrorIs(t, err, context.Canceled)
	q.ShutDown()
	_, err = q.GetBatch(context.Background(), 2, nil)
	require.True(t, errors.Is(err, queue.ErrShutDown))
}
