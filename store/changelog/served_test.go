package changelog_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/changelog"
	"github.com/converge-go/converge/store/httpstore/httpstoretest"
	"github.com/stretchr/testify/require"
)

// TestAShipperOfAServedStoreRestoresEveryRevision: a Shipper that is a
// client of a store served over HTTP ships every change its watch
// delivers; the state at every revision restores exactly.
func TestAShipperOfAServedStoreRestoresEveryRevision(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 11))
	backend := store.NewMemory[[]byte]()
	defer backend.Close()
	served := httpstoretest.Serve(t, store.Store[[]byte](backend), httpstoretest.Options{})
	dir := t.TempDir()
	// The values as they are, as the model has them (the client's own
	// codec would log their JSON).
	sh, err := changelog.NewShipper(store.Store[[]byte](served.Client), store.Codec[[]byte](asIs{}), changelog.Options{Dir: dir, SegmentSize: 1000})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- sh.Run(ctx) }()
	m := newModel()
	var last int64
	for range 150 {
		last = m.change(t, t.Context(), served.Client, rng, 10)
	}
	require.Eventually(t, func() bool { return sh.Synced() >= last }, 30*time.Second, 5*time.Millisecond)
	cancel()
	require.NoError(t, <-done)
	a := changelog.Archive{Dir: dir}
	first := int64(0)
	if files, err := changelog.Records(dir, identityOf(t, served.Client)); err == nil && len(files) > 0 {
		first = files[0].Revision - 1 // the epoch's snapshot was taken at or after it
	}
	for rev := max(first, 1); rev <= last; rev++ {
		requireStateAt(t, a, m, rev)
	}
}

func identityOf(t *testing.T, s any) string {
	t.Helper()
	id, err := s.(store.Identifier).Identity(t.Context())
	require.NoError(t, err)
	return id
}

// asIs is the codec of bytes as they are.
type asIs struct{}

func (asIs) Marshal(v []byte) ([]byte, error)   { return v, nil }
func (asIs) Unmarshal(b []byte) ([]byte, error) { return b, nil }
