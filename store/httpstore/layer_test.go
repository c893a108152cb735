package httpstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/httpstore"
	"github.com/converge-go/converge/store/httpstore/httpstoretest"
	"github.com/stretchr/testify/require"
)

// exchange sends a request as curl would (JSON content type for a POST, no
// token) and returns the status and the answer's members.
func exchange(t *testing.T, method, url, body string) (int, map[string]json.RawMessage) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var members map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(data, &members), "the answer: %s", data)
	return resp.StatusCode, members
}

// errorOf decodes an answer's error member.
func errorOf(t *testing.T, answer map[string]json.RawMessage) (code string, also []string) {
	t.Helper()
	var e struct {
		Code string   `json:"code"`
		Also []string `json:"also"`
	}
	require.NoError(t, json.Unmarshal(answer["error"], &e), "an error answer: %v", answer)
	return e.Code, e.Also
}

// noIdentity is a store that hides its store.Identifier.
type noIdentity[T any] struct{ store.Store[T] }

// requireUnsupported requires err to be the refusal of a route the served
// store does not serve.
func requireUnsupported(t *testing.T, err error, what string) {
	t.Helper()
	require.ErrorIs(t, err, errors.ErrUnsupported, what)
	require.ErrorIs(t, err, store.ErrInvalid, what)
}

// TestEveryLayerRouteIsRefusedAsUnsupportedByAStoreWithoutTheLayerAndWritesNothing:
// served without the API-server layer, a status write, a Foreground or
// Orphan delete and an identity asked of a store that has none are refused
// (404, code "invalid", also "unsupported"; errors.ErrUnsupported and
// store.ErrInvalid on the client), and nothing is written; what such a
// store does serve (Replace, a Background DeleteWith) works and says it
// deleted nothing, marked nothing.
func TestEveryLayerRouteIsRefusedAsUnsupportedByAStoreWithoutTheLayerAndWritesNothing(t *testing.T) {
	ctx := t.Context()
	m := store.NewMemory[json.RawMessage]()
	t.Cleanup(func() { _ = m.Close() })
	c := httpstoretest.Serve[json.RawMessage](t, m, httpstoretest.Options{})
	obj, err := m.Create(ctx, "a", json.RawMessage(`{"metadata":{"finalizers":["f"]},"spec":{"n":1}}`))
	require.NoError(t, err)

	_, err = c.UpdateStatus(ctx, "a", json.RawMessage(`{"status":{"ready":true}}`), obj.Revision)
	requireUnsupported(t, err, "a status write")
	for _, p := range []apistore.Propagation{apistore.Foreground, apistore.Orphan} {
		_, _, err = c.DeleteWith(ctx, "a", obj.Revision, p)
		requireUnsupported(t, err, string(p)+" delete")
	}
	status, answer := exchange(t, http.MethodPost, c.Server.URL+"/v1/status?key=a&revision=1", `{"status":{}}`)
	code, also := errorOf(t, answer)
	require.Equal(t, http.StatusNotFound, status)
	require.Equal(t, "invalid", code)
	require.Equal(t, []string{"unsupported"}, also)
	got, err := m.Get(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, obj, got, "a refused request wrote")

	hidden := httpstoretest.Serve[json.RawMessage](t, noIdentity[json.RawMessage]{m}, httpstoretest.Options{})
	_, err = hidden.Identity(ctx)
	requireUnsupported(t, err, "the identity of a store that has none")
	id, err := c.Identity(ctx)
	require.NoError(t, err)
	want, err := m.Identity(ctx)
	require.NoError(t, err)
	require.Equal(t, want, id, "a store's identity is served")

	replaced, deleted, err := c.Replace(ctx, "a", json.RawMessage(`{"spec":{"n":2}}`), obj.Revision)
	require.NoError(t, err)
	require.False(t, deleted)
	require.JSONEq(t, `{"spec":{"n":2}}`, string(replaced.Value), "without the layer a write is stored as sent")
	rev, marked, err := c.DeleteWith(ctx, "a", replaced.Revision, apistore.Background)
	require.NoError(t, err)
	require.False(t, marked)
	now, err := m.Revision(ctx)
	require.NoError(t, err)
	require.Equal(t, now, rev)
	_, err = m.Get(ctx, "a")
	require.ErrorIs(t, err, store.ErrNotFound)
}

// TestAnUnknownPropagationIsRefusedWithOrWithoutTheLayerAndWritesNothing:
// the client refuses it before sending; the server refuses it (400,
// invalid) before calling its store.
func TestAnUnknownPropagationIsRefusedWithOrWithoutTheLayerAndWritesNothing(t *testing.T) {
	ctx := t.Context()
	for name, layered := range map[string]bool{"raw": false, "layer": true} {
		m := store.NewMemory[[]byte]()
		t.Cleanup(func() { _ = m.Close() })
		view := store.NewView[json.RawMessage](m, store.JSON[json.RawMessage]{})
		var c httpstoretest.Served[json.RawMessage]
		if layered {
			c = httpstoretest.ServeLayer(t, view, apistore.JSONKind{}, httpstoretest.Options{})
		} else {
			c = httpstoretest.Serve[json.RawMessage](t, view, httpstoretest.Options{})
		}
		obj, err := c.Create(ctx, "a", json.RawMessage(`{"spec":{"n":1}}`))
		require.NoError(t, err)
		_, _, err = c.DeleteWith(ctx, "a", obj.Revision, apistore.Propagation("sideways"))
		require.ErrorIs(t, err, store.ErrInvalid, name)
		status, answer := exchange(t, http.MethodPost, c.Server.URL+"/v1/delete?key=a&revision=1&propagation=sideways", "")
		code, _ := errorOf(t, answer)
		require.Equal(t, http.StatusBadRequest, status, name)
		require.Equal(t, "invalid", code, name)
		got, err := c.Get(ctx, "a")
		require.NoError(t, err, name)
		require.Equal(t, obj.Revision, got.Revision, "%s: a refused delete wrote", name)
	}
}

// TestTheLayersAnswersSayMarkedAndDeletedOnTheWire: as curl sees them, a
// delete that marks answers "marked": true, an update that removes the
// last finalizer answers "deleted": true with the delete's revision, a
// status write answers the object as stored, and /v1/identity the store's
// identity.
func TestTheLayersAnswersSayMarkedAndDeletedOnTheWire(t *testing.T) {
	m := store.NewMemory[[]byte]()
	t.Cleanup(func() { _ = m.Close() })
	c := httpstoretest.ServeLayer(t, store.NewView[json.RawMessage](m, store.JSON[json.RawMessage]{}), apistore.JSONKind{}, httpstoretest.Options{})
	url := c.Server.URL

	status, answer := exchange(t, http.MethodPost, url+"/v1/create?key=a", `{"metadata":{"finalizers":["f"]},"spec":{"n":1}}`)
	require.Equal(t, http.StatusCreated, status, "%v", answer)
	status, answer = exchange(t, http.MethodPost, url+"/v1/status?key=a&revision=1", `{"spec":{"n":9},"status":{"ready":true}}`)
	require.Equal(t, http.StatusOK, status, "%v", answer)
	require.JSONEq(t, `{"metadata":{"generation":1,"finalizers":["f"]},"spec":{"n":1},"status":{"ready":true}}`, string(answer["value"]))

	status, answer = exchange(t, http.MethodPost, url+"/v1/delete?key=a&revision=2&propagation=background", "")
	require.Equal(t, http.StatusOK, status, "%v", answer)
	require.JSONEq(t, `{"revision":3,"marked":true}`, mustJSON(t, answer))

	status, answer = exchange(t, http.MethodPost, url+"/v1/update?key=a&revision=3", `{"spec":{"n":1}}`)
	require.Equal(t, http.StatusOK, status, "%v", answer)
	require.Equal(t, "true", string(answer["deleted"]))
	require.Equal(t, "4", string(answer["revision"]), "the revision of the delete")
	_, err := c.Get(t.Context(), "a")
	require.ErrorIs(t, err, store.ErrNotFound)

	status, answer = exchange(t, http.MethodGet, url+"/v1/identity", "")
	require.Equal(t, http.StatusOK, status, "%v", answer)
	want, err := m.Identity(t.Context())
	require.NoError(t, err)
	require.Equal(t, mustJSON(t, want), string(answer["identity"]))
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// TestAWriteWhoseGenerationOrMarkDiffersFromTheStoredIsAcceptedAndTheLayersStand:
// the handler checks that the codec keeps what a client sent, not that the
// layer stores it: the layer owns the generation and the deletion mark, so
// a write that says other ones is accepted, and the object (as answered
// and as stored) has the layer's, for JSON documents sent as curl sends
// them and for Go values of a typed Kind.
func TestAWriteWhoseGenerationOrMarkDiffersFromTheStoredIsAcceptedAndTheLayersStand(t *testing.T) {
	ctx := t.Context()
	m := store.NewMemory[[]byte]()
	t.Cleanup(func() { _ = m.Close() })
	c := httpstoretest.ServeLayer(t, store.NewView[json.RawMessage](m, store.JSON[json.RawMessage]{}), apistore.JSONKind{}, httpstoretest.Options{})
	forged := `"generation":99,"deletion":{"revision":1,"time":"2001-02-03T04:05:06Z","propagation":"orphan"}`
	status, answer := exchange(t, http.MethodPost, c.Server.URL+"/v1/create?key=a", `{"metadata":{`+forged+`},"spec":{"n":1}}`)
	require.Equal(t, http.StatusCreated, status, "%v", answer)
	require.JSONEq(t, `{"metadata":{"generation":1},"spec":{"n":1}}`, string(answer["value"]))
	status, answer = exchange(t, http.MethodPost, c.Server.URL+"/v1/update?key=a&revision=1", `{"metadata":{`+forged+`,"finalizers":["f"]},"spec":{"n":2}}`)
	require.Equal(t, http.StatusOK, status, "%v", answer)
	require.JSONEq(t, `{"metadata":{"generation":2,"finalizers":["f"]},"spec":{"n":2}}`, string(answer["value"]))
	got, err := c.Get(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, string(answer["value"]), string(got.Value), "the answer is the object as stored")

	typed := store.NewMemory[widget]()
	t.Cleanup(func() { _ = typed.Close() })
	w := httpstoretest.ServeLayer[widget](t, typed, widgetKind{}, httpstoretest.Options{})
	obj, err := w.Create(ctx, "w", widget{Meta: apistore.Meta{Generation: 7, Finalizers: []string{"f"}}, Spec: widgetSpec{Size: 1}})
	require.NoError(t, err)
	require.Equal(t, int64(1), obj.Value.Generation)
	rev, marked, err := w.DeleteWith(ctx, "w", obj.Revision, apistore.Background)
	require.NoError(t, err)
	require.True(t, marked)
	stored, err := typed.Get(ctx, "w")
	require.NoError(t, err)
	mark := stored.Value.Deletion
	other := widget{Meta: apistore.Meta{Generation: 42, Finalizers: []string{"f"}, Deletion: &apistore.Deletion{Revision: 1, Propagation: apistore.Orphan}}, Spec: widgetSpec{Size: 2}}
	obj, err = w.Update(ctx, "w", other, rev)
	require.NoError(t, err, "a write with another generation and mark")
	require.Equal(t, int64(2), obj.Value.Generation, "the layer's generation: bumped once for the spec change")
	require.Equal(t, mark, obj.Value.Deletion, "the layer's mark")
	stored, err = typed.Get(ctx, "w")
	require.NoError(t, err)
	require.Equal(t, obj.Value, stored.Value, "the answer is the object as stored")
}

// TestTheDeletingConditionCrossesTheWire: the errors of a marked object
// match apistore.ErrDeleting on the client as on the server, with their
// codes' sentinels.
func TestTheDeletingConditionCrossesTheWire(t *testing.T) {
	ctx := context.Background()
	typed := store.NewMemory[widget]()
	t.Cleanup(func() { _ = typed.Close() })
	w := httpstoretest.ServeLayer[widget](t, typed, widgetKind{}, httpstoretest.Options{})
	obj, err := w.Create(ctx, "w", widget{Meta: apistore.Meta{Finalizers: []string{"f"}}})
	require.NoError(t, err)
	rev, _, err := w.DeleteWith(ctx, "w", obj.Revision, apistore.Background)
	require.NoError(t, err)
	_, err = w.Create(ctx, "w", widget{})
	require.ErrorIs(t, err, apistore.ErrDeleting)
	require.ErrorIs(t, err, store.ErrExists)
	_, err = w.Update(ctx, "w", widget{Meta: apistore.Meta{Finalizers: []string{"f", "late"}}}, rev)
	require.ErrorIs(t, err, apistore.ErrDeleting)
	require.ErrorIs(t, err, store.ErrInvalid)
	_, err = w.Update(ctx, "w", widget{Meta: apistore.Meta{Finalizers: []string{"f", "late"}}}, rev+10)
	require.NotErrorIs(t, err, apistore.ErrDeleting, "a conflict is no more than a conflict")
}

// TestTheLayersRoutesAskTheSameCredentials: without a token the layer's
// writes and the identity are refused as unauthorized; a read-only token
// reads the identity and its layer writes are forbidden; nothing is
// written either way.
func TestTheLayersRoutesAskTheSameCredentials(t *testing.T) {
	ctx := t.Context()
	m := store.NewMemory[[]byte]()
	t.Cleanup(func() { _ = m.Close() })
	view := store.NewView[json.RawMessage](m, store.JSON[json.RawMessage]{})
	tokens := []httpstore.HandlerOption{httpstore.WithReadWriteToken(rwToken), httpstore.WithReadOnlyToken(roToken)}
	admin := httpstoretest.ServeLayer(t, view, apistore.JSONKind{}, httpstoretest.Options{Handler: tokens, Client: []httpstore.ClientOption{httpstore.WithToken(rwToken)}})
	obj, err := admin.Create(ctx, "a", json.RawMessage(`{"metadata":{"finalizers":["f"]},"spec":{"n":1}}`))
	require.NoError(t, err)
	v := json.RawMessage(`{"spec":{"n":2},"status":{"ready":true}}`)
	for name, tc := range map[string]struct {
		opts []httpstore.ClientOption
		want error
	}{
		"no token":  {nil, httpstore.ErrUnauthorized},
		"read-only": {[]httpstore.ClientOption{httpstore.WithToken(roToken)}, httpstore.ErrForbidden},
	} {
		c := client[json.RawMessage](t, admin.Server.URL, tc.opts...)
		_, err := c.UpdateStatus(ctx, "a", v, obj.Revision)
		require.ErrorIs(t, err, tc.want, "%s: UpdateStatus", name)
		_, _, err = c.Replace(ctx, "a", v, obj.Revision)
		require.ErrorIs(t, err, tc.want, "%s: Replace", name)
		_, _, err = c.DeleteWith(ctx, "a", obj.Revision, apistore.Foreground)
		require.ErrorIs(t, err, tc.want, "%s: DeleteWith", name)
		_, err = c.Identity(ctx)
		if tc.want == httpstore.ErrUnauthorized {
			require.ErrorIs(t, err, tc.want, "%s: Identity", name)
		} else {
			require.NoError(t, err, "%s: Identity is a read", name)
		}
	}
	got, err := admin.Get(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, obj, got, "a refused request wrote")
}

// infKind is a Kind whose writes store a value JSON cannot encode (an
// infinite number), as a faulty Kind might.
type infKind struct{}

func (infKind) Meta(map[string]any) (apistore.Meta, error) { return apistore.Meta{}, nil }
func (infKind) WithMeta(v map[string]any, _ apistore.Meta) (map[string]any, error) {
	return map[string]any{"n": v["n"], "inf": math.Inf(1)}, nil
}
func (infKind) SameSpec(a, b map[string]any) (bool, error)           { return true, nil }
func (infKind) Merge(spec, _ map[string]any) (map[string]any, error) { return spec, nil }

// TestAWriteWhoseStoredValueCannotBeAnsweredIsNotTakenForARefusal: when the
// layer stored a value the answer cannot encode, the client is told the
// write was made (an internal error), never that it was refused as
// invalid, which would mean nothing was written.
func TestAWriteWhoseStoredValueCannotBeAnsweredIsNotTakenForARefusal(t *testing.T) {
	m := store.NewMemory[map[string]any]()
	t.Cleanup(func() { _ = m.Close() })
	c := httpstoretest.ServeLayer[map[string]any](t, m, infKind{}, httpstoretest.Options{})
	_, err := c.Create(t.Context(), "a", map[string]any{"n": 1.0})
	require.Error(t, err)
	require.NotErrorIs(t, err, store.ErrInvalid, "a write that was made is no refusal")
	require.Contains(t, err.Error(), `"a" was written at revision 1`)
	_, err = m.Get(t.Context(), "a")
	require.NoError(t, err, "the write was made")
}
