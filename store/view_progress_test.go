package store_test

import (
	"context"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

// A View's watch answers progress requests through its byte store's watch,
// with the decoded changes before each answer.
func TestViewWatchAnswersProgressRequestsThroughItsByteStore(t *testing.T) {
	type app struct{ Replicas int }
	runProgressTests(t, progressCase[app]{
		open: func(t *testing.T) store.Store[app] {
			raw := store.NewMemory[[]byte](store.WithWatchLag(100000))
			t.Cleanup(func() { raw.Close() })
			return store.NewView[app](raw, nil)
		},
		value: func(i int) app { return app{Replicas: i} },
	})
}

// noProgressStore hides its watches' ProgressRequester.
type noProgressStore struct{ store.Store[[]byte] }

func (s noProgressStore) Watch(ctx context.Context, prefix string, after int64) (store.Watcher[[]byte], error) {
	w, err := s.Store.Watch(ctx, prefix, after)
	if err != nil {
		return nil, err
	}
	return struct{ store.Watcher[[]byte] }{w}, nil
}

// A View over a store whose watches cannot answer progress requests does
// not claim to: its watcher does not implement ProgressRequester.
func TestViewWatchClaimsProgressOnlyIfItsStoreCanAnswer(t *testing.T) {
	ctx := context.Background()
	raw := store.NewMemory[[]byte]()
	defer raw.Close()
	v := store.NewView[int](noProgressStore{raw}, nil)
	w, err := v.Watch(ctx, "", 0)
	require.NoError(t, err)
	defer w.Stop()
	_, ok := w.(store.ProgressRequester)
	require.False(t, ok)
}
