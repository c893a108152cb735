package storetest

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

// watchShared checks the events of keys written in one transaction, which
// share a revision (only for backends that set Options.CreateShared): each
// watch matching them delivers every one exactly once, all at that revision;
// a watch resumed before it delivers them all again, one resumed at it none;
// a progress request answers after all of them; List and Get see them at
// that revision.
func (o suite) watchShared(t *testing.T, s store.Store[*Value]) {
	if o.opts.CreateShared == nil {
		t.Skip("the backend cannot write several keys in one revision (Options.CreateShared is nil)")
	}
	ctx := t.Context()
	start := mustRevision(t, s)
	w := mustWatch(t, s, "s/", start)
	all := mustWatch(t, s, "", start)
	values := map[string]*Value{"s/a": val(1), "s/b": val(2), "s/c": val(3), "t/x": val(4)}
	rev, err := o.opts.CreateShared(ctx, s, values)
	require.NoError(t, err, "CreateShared")
	require.Greater(t, rev, start, "the shared revision")

	want := func(prefix string) []store.Event[*Value] {
		var evs []store.Event[*Value]
		for _, k := range slices.Sorted(maps.Keys(values)) {
			if strings.HasPrefix(k, prefix) {
				evs = append(evs, store.Event[*Value]{Type: store.Created, Object: store.Object[*Value]{
					Key: k, Value: values[k], Revision: rev, CreateRevision: rev,
				}})
			}
		}
		return evs
	}
	receiveShared(t, w, want("s/"))
	receiveShared(t, all, want(""))
	ev := requestProgress(t, w)
	require.GreaterOrEqual(t, ev.Object.Revision, rev, "Progress after a shared revision")

	receiveShared(t, mustWatch(t, s, "s/", start), want("s/"))
	resumed := mustWatch(t, s, "s/", rev)

	objs, listRev, err := s.List(ctx, "s/")
	require.NoError(t, err)
	require.GreaterOrEqual(t, listRev, rev)
	var listed []store.Event[*Value]
	for _, obj := range objs {
		if obj.Revision == rev {
			listed = append(listed, store.Event[*Value]{Type: store.Created, Object: obj})
		}
	}
	require.Equal(t, want("s/"), listed, "List after a shared revision")
	for k, v := range values {
		got, err := s.Get(ctx, k)
		require.NoError(t, err)
		require.Equal(t, store.Object[*Value]{Key: k, Value: v, Revision: rev, CreateRevision: rev}, got)
	}
	quiet(t, s, w, "s/")
	ev = next(t, resumed)
	require.Equal(t, "s/~marker", ev.Object.Key, "a watch resumed at the shared revision delivers none of its events")
}

// receiveShared reads len(want) events of one revision, in whatever order
// the backend gives them within it, and checks them against want (sorted by
// key).
func receiveShared(t *testing.T, w store.Watcher[*Value], want []store.Event[*Value]) {
	t.Helper()
	got := make([]store.Event[*Value], 0, len(want))
	for range want {
		got = append(got, next(t, w))
	}
	slices.SortFunc(got, func(a, b store.Event[*Value]) int {
		return strings.Compare(a.Object.Key, b.Object.Key)
	})
	require.Equal(t, want, got, "the events of one shared revision")
}
