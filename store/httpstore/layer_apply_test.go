package httpstore_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/httpstore"
	"github.com/converge-go/converge/store/httpstore/httpstoretest"
	"github.com/stretchr/testify/require"
)

// TestAnApplyByCurlKeepsTheControllersFinalizersAndNeverCompletesADeletion:
// a spec-only document POSTed to /v1/apply, as curl sends it, gets the
// layer's rule on the server: the finalizer and owner a controller set
// stay, the status stays, and a marked object stays marked.
func TestAnApplyByCurlKeepsTheControllersFinalizersAndNeverCompletesADeletion(t *testing.T) {
	ctx := t.Context()
	m := store.NewMemory[json.RawMessage]()
	t.Cleanup(func() { _ = m.Close() })
	c := httpstoretest.ServeLayer(t, m, apistore.JSONKind{}, httpstoretest.Options{})
	_, err := c.Create(ctx, "dbs/app", json.RawMessage(`{"metadata":{"finalizers":["ctl/drop"],"owners":[{"key":"apps/a","uid":1}]},"spec":{"n":1},"status":{"ready":true}}`))
	require.NoError(t, err)

	status, answer := exchange(t, http.MethodPost, c.Server.URL+"/v1/apply?key=dbs/app", `{"spec":{"n":2}}`)
	require.Equal(t, http.StatusOK, status, "%v", answer)
	got, err := c.Get(ctx, "dbs/app")
	require.NoError(t, err)
	require.JSONEq(t, string(answer["value"]), string(got.Value), "the answer is the object as stored")
	require.JSONEq(t, `{"metadata":{"generation":2,"finalizers":["ctl/drop"],"owners":[{"key":"apps/a","uid":1}]},"spec":{"n":2},"status":{"ready":true}}`, string(got.Value))

	_, marked, err := c.DeleteWith(ctx, "dbs/app", got.Revision, apistore.Background)
	require.NoError(t, err)
	require.True(t, marked)
	status, answer = exchange(t, http.MethodPost, c.Server.URL+"/v1/apply?key=dbs/app", `{"metadata":{"finalizers":[]},"spec":{"n":3}}`)
	require.Equal(t, http.StatusOK, status, "%v", answer)
	got, err = c.Get(ctx, "dbs/app")
	require.NoError(t, err, "an apply never completes a deletion")
	m2, err := apistore.JSONKind{}.Meta(got.Value)
	require.NoError(t, err)
	require.True(t, m2.Deleting())
	require.Equal(t, []string{"ctl/drop"}, m2.Finalizers)

	_, err = c.Apply(ctx, "dbs/app", json.RawMessage(`{"metadata":{"finalizers":["user/late"]}}`))
	require.ErrorIs(t, err, apistore.ErrDeleting, "a finalizer added by an apply to a marked object")
	require.ErrorIs(t, err, store.ErrInvalid)
}

// TestApplyIsRefusedAsUnsupportedByAStoreWithoutTheLayerAndWritesNothing:
// without the layer there is no rule to apply by: /v1/apply is refused
// (404, invalid, also unsupported) before the store is called.
func TestApplyIsRefusedAsUnsupportedByAStoreWithoutTheLayerAndWritesNothing(t *testing.T) {
	ctx := t.Context()
	m := store.NewMemory[json.RawMessage]()
	t.Cleanup(func() { _ = m.Close() })
	c := httpstoretest.Serve[json.RawMessage](t, m, httpstoretest.Options{})
	obj, err := m.Create(ctx, "a", json.RawMessage(`{"metadata":{"finalizers":["f"]},"spec":{"n":1}}`))
	require.NoError(t, err)

	_, err = c.Apply(ctx, "a", json.RawMessage(`{"spec":{"n":2}}`))
	requireUnsupported(t, err, "an apply")
	_, err = c.Apply(ctx, "b", json.RawMessage(`{"spec":{"n":2}}`))
	requireUnsupported(t, err, "an apply of an absent key")
	status, answer := exchange(t, http.MethodPost, c.Server.URL+"/v1/apply?key=a", `{"spec":{}}`)
	code, also := errorOf(t, answer)
	require.Equal(t, http.StatusNotFound, status)
	require.Equal(t, "invalid", code)
	require.Equal(t, []string{"unsupported"}, also)
	got, err := m.Get(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, obj, got, "a refused apply wrote")
	_, err = m.Get(ctx, "b")
	require.ErrorIs(t, err, store.ErrNotFound, "a refused apply created")
}

// TestAReadOnlyTokensApplyIsForbiddenAndWritesNothing: /v1/apply is a
// write, refused to a read-only token before the layer is called.
func TestAReadOnlyTokensApplyIsForbiddenAndWritesNothing(t *testing.T) {
	ctx := t.Context()
	m := store.NewMemory[json.RawMessage]()
	t.Cleanup(func() { _ = m.Close() })
	obj, err := m.Create(ctx, "a", json.RawMessage(`{"metadata":{"generation":1},"spec":{"n":1}}`))
	require.NoError(t, err)
	c := httpstoretest.ServeLayer(t, m, apistore.JSONKind{}, httpstoretest.Options{
		Handler: []httpstore.HandlerOption{httpstore.WithReadWriteToken("rw-token-0123456789"), httpstore.WithReadOnlyToken("ro-token-0123456789")},
		Client:  []httpstore.ClientOption{httpstore.WithToken("ro-token-0123456789")},
	})
	_, err = c.Apply(ctx, "a", json.RawMessage(`{"spec":{"n":2}}`))
	require.ErrorIs(t, err, httpstore.ErrForbidden)
	_, err = c.Apply(ctx, "b", json.RawMessage(`{"spec":{"n":2}}`))
	require.ErrorIs(t, err, httpstore.ErrForbidden)
	got, err := m.Get(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, obj, got, "a forbidden apply wrote")
	_, err = m.Get(ctx, "b")
	require.ErrorIs(t, err, store.ErrNotFound, "a forbidden apply created")
}
