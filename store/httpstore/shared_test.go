package httpstore_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/httpstore"
	"github.com/converge-go/converge/store/storetest"
)

// sharedOf serves a store of JSON values and returns a Shared client of
// it, and a count of the watch streams the server opened.
func sharedOf(t *testing.T) (*httpstore.Shared, *atomic.Int64) {
	t.Helper()
	m := store.NewMemory[json.RawMessage]()
	t.Cleanup(func() { _ = m.Close() })
	h, err := httpstore.NewHandler[json.RawMessage](m)
	require.NoError(t, err)
	var watches atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/watch") {
			watches.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	s, err := httpstore.NewShared(srv.URL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s, &watches
}

// TestATypedViewOfASharedClientPassesConformance: a view keeps every
// guarantee of a store (storetest), its watches served by the shared
// stream or, behind it, by one of their own.
func TestATypedViewOfASharedClientPassesConformance(t *testing.T) {
	storetest.RunWith(t, func(t *testing.T) store.Store[*storetest.Value] {
		s, _ := sharedOf(t)
		return httpstore.ViewOf[*storetest.Value](s, nil)
	}, storetest.Options{RecordsCauses: true}) // served over the memory store
}

type kindA struct{ A int }
type kindB struct{ B string }

// TestViewsOfSeveralKindsShareOneWatch: views of two kinds, watching
// their prefixes from the same revision, receive each its own changes,
// decoded, in order, from one stream of the server.
func TestViewsOfSeveralKindsShareOneWatch(t *testing.T) {
	s, watches := sharedOf(t)
	as, bs := httpstore.ViewOf[kindA](s, nil), httpstore.ViewOf[kindB](s, nil)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	rev, err := as.Revision(ctx)
	require.NoError(t, err)
	wa, err := as.Watch(ctx, "a/", rev)
	require.NoError(t, err)
	defer wa.Stop()
	wb, err := bs.Watch(ctx, "b/", rev)
	require.NoError(t, err)
	defer wb.Stop()
	for i := range 3 {
		_, err := as.Create(ctx, "a/"+string(rune('0'+i)), kindA{A: i})
		require.NoError(t, err)
		_, err = bs.Create(ctx, "b/"+string(rune('0'+i)), kindB{B: "x"})
		require.NoError(t, err)
	}
	for i := range 3 {
		ev := <-wa.Events()
		require.Equal(t, kindA{A: i}, ev.Object.Value)
		eb := <-wb.Events()
		require.Equal(t, "b/"+string(rune('0'+i)), eb.Object.Key)
		require.Equal(t, kindB{B: "x"}, eb.Object.Value)
	}
	require.EqualValues(t, 1, watches.Load(), "one stream serves both kinds")
}
