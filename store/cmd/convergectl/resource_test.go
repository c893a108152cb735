package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/httpstore"
	"github.com/stretchr/testify/require"
)

// serveLayer serves store over HTTP with the API-server layer, as a store
// server does, with a read-write and a read-only token, and returns the
// store below the layer and the URL.
func serveLayer(t *testing.T) (*store.Memory[value], string) {
	t.Helper()
	m := store.NewMemory[value]()
	t.Cleanup(func() { _ = m.Close() })
	layer, err := apistore.New[value](m, apistore.JSONKind{})
	require.NoError(t, err)
	return m, serveStore(t, layer)
}

// serveStore serves s with the admin's and the viewer's tokens.
func serveStore(t *testing.T, s store.Store[value]) string {
	t.Helper()
	h, err := httpstore.NewHandler[value](s, httpstore.WithReadWriteToken(adminToken), httpstore.WithReadOnlyToken(viewerToken))
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// writeFile writes content to a new file and returns its path.
func writeFile(t *testing.T, content string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "doc.json")
	require.NoError(t, os.WriteFile(file, []byte(content), 0o600))
	return file
}

// resource is a stored resource, decoded.
type resource struct {
	meta   apistore.Meta
	spec   string            // the spec's JSON text
	status map[string]string // each status member's JSON text
}

// stored reads key from m, below the layer.
func stored(t *testing.T, m *store.Memory[value], key string) (store.Object[value], resource) {
	t.Helper()
	obj, err := m.Get(t.Context(), key)
	require.NoError(t, err)
	meta, err := apistore.JSONKind{}.Meta(obj.Value)
	require.NoError(t, err)
	var members map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(obj.Value, &members))
	r := resource{meta: meta, spec: string(members["spec"]), status: map[string]string{}}
	for name, v := range members {
		if name != "metadata" && name != "spec" {
			r.status[name] = string(v)
		}
	}
	return obj, r
}

// TestApplyOfAResourceCreatesItThenWritesTheSpecAndKeepsTheStatus: apply
// of a resource creates the object with its spec, finalizers and owners at
// generation 1 (its status members are not written), and then writes
// FILE's spec and metadata over the stored object, keeping the status the
// controller wrote.
func TestApplyOfAResourceCreatesItThenWritesTheSpecAndKeepsTheStatus(t *testing.T) {
	m, url := serveLayer(t)
	owners := `[{"key":"apps/parent","uid":1}]`
	r := ctl(t, url, "", "apply", "apps/web", writeFile(t, `{"metadata":{"finalizers":["cleanup"],"owners":`+owners+`},"spec":{"replicas":2},"status":{"forged":true}}`))
	require.Equal(t, exitOK, r.code, r.stderr)
	created := decodeObject(t, r.stdout)
	obj, got := stored(t, m, "apps/web")
	require.Equal(t, obj.Revision, created.Revision)
	require.Equal(t, int64(1), got.meta.Generation)
	require.Equal(t, []string{"cleanup"}, got.meta.Finalizers)
	require.Equal(t, []apistore.Owner{{Key: "apps/parent", UID: 1}}, got.meta.Owners)
	require.JSONEq(t, `{"replicas":2}`, got.spec)
	require.Empty(t, got.status, "apply writes no status")

	_, err := m.Update(t.Context(), "apps/web", value(`{"metadata":{"generation":1,"finalizers":["cleanup"]},"spec":{"replicas":2},"status":{"ready":2}}`), obj.Revision)
	require.NoError(t, err, "the controller's status write")
	r = ctl(t, url, `{"metadata":{"finalizers":["cleanup","backup"]},"spec":{"replicas":3}}`, "apply", "apps/web")
	require.Equal(t, exitOK, r.code, r.stderr)
	_, got = stored(t, m, "apps/web")
	require.JSONEq(t, `{"replicas":3}`, got.spec)
	require.Equal(t, map[string]string{"status": `{"ready":2}`}, got.status, "a spec-only apply keeps the status")
	require.Equal(t, []string{"cleanup", "backup"}, got.meta.Finalizers)
	require.Empty(t, got.meta.Owners, "FILE names no owner: none is added")
}

// TestTheGenerationBumpsOnlyWhenApplyChangesTheSpec: applying the same
// spec, however written, keeps the generation; another spec bumps it by
// one; the generation FILE says is ignored.
func TestTheGenerationBumpsOnlyWhenApplyChangesTheSpec(t *testing.T) {
	m, url := serveLayer(t)
	for i, step := range []struct {
		doc  string
		want int64
	}{
		{`{"spec":{"image":"app:1","ports":[80,443]}}`, 1},
		{`{"metadata":{"generation":50},"spec":{"ports":[80,443],"image":"app:1"}}`, 1},
		{"{\"spec\": { \"image\" : \"app\\u003a1\", \"ports\": [8e1, 443.0] } }", 1},
		{`{"spec":{"image":"app:2","ports":[80,443]}}`, 2},
		{`{"metadata":{"generation":1},"spec":{"image":"app:3","ports":[80,443]}}`, 3},
	} {
		r := runAs(t, url, step.doc, "apply", "k")
		require.Equal(t, exitOK, r.code, "step %d: %s", i, r.stderr)
		_, got := stored(t, m, "k")
		require.Equal(t, step.want, got.meta.Generation, "step %d: %s", i, step.doc)
	}
}

// TestStatusWritesTheStatusAloneAndKeepsTheSpecAndGeneration: status
// writes FILE's status members over the stored spec and metadata, which
// stay as they were whatever FILE says of them, and the generation does
// not move.
func TestStatusWritesTheStatusAloneAndKeepsTheSpecAndGeneration(t *testing.T) {
	m, url := serveLayer(t)
	r := runAs(t, url, `{"metadata":{"finalizers":["cleanup"]},"spec":{"replicas":2}}`, "apply", "k")
	require.Equal(t, exitOK, r.code, r.stderr)
	r = ctl(t, url, `{"metadata":{"generation":9,"finalizers":[]},"spec":{"replicas":0},"status":{"ready":2},"observedGeneration":1}`, "status", "k")
	require.Equal(t, exitOK, r.code, r.stderr)
	printedObj := decodeObject(t, r.stdout)
	obj, got := stored(t, m, "k")
	require.Equal(t, obj.Revision, printedObj.Revision)
	require.JSONEq(t, string(obj.Value), string(printedObj.Value), "status prints the object as stored")
	require.JSONEq(t, `{"replicas":2}`, got.spec, "a status write keeps the spec")
	require.Equal(t, apistore.Meta{Generation: 1, Finalizers: []string{"cleanup"}}, got.meta, "a status write keeps the metadata")
	require.Equal(t, map[string]string{"status": `{"ready":2}`, "observedGeneration": "1"}, got.status)

	r = runAs(t, url, `[1,2]`, "status", "k")
	require.Equal(t, exitError, r.code, "a status that is no resource")
	require.Contains(t, r.stderr, "not a JSON object")
	r = runAs(t, url, `{"status":{}}`, "status", "missing")
	require.Equal(t, exitNotFound, r.code, r.stderr)
	after, _ := stored(t, m, "k")
	require.Equal(t, obj.Revision, after.Revision, "a refused status wrote")
}

// TestGetPrintsTheObjectWithItsMetadataAndEachPartWithO: get prints the
// object with its metadata (generation, finalizers, the deletion mark,
// owners) in its value, and -o spec, status or metadata that part alone,
// as one JSON line each; a value that is no resource has no parts.
func TestGetPrintsTheObjectWithItsMetadataAndEachPartWithO(t *testing.T) {
	m, url := serveLayer(t)
	r := runAs(t, url, `{"metadata":{"finalizers":["cleanup"],"owners":[{"key":"p","uid":1}]},"spec":{"replicas":2}}`, "apply", "k")
	require.Equal(t, exitOK, r.code, r.stderr)
	r = runAs(t, url, `{"status":{"ready":1},"observedGeneration":1}`, "status", "k")
	require.Equal(t, exitOK, r.code, r.stderr)
	r = runAs(t, url, "", "delete", "k")
	require.Equal(t, exitOK, r.code, r.stderr)
	obj, got := stored(t, m, "k")

	r = ctl(t, url, "", "get", "k")
	require.Equal(t, exitOK, r.code, r.stderr)
	o := decodeObject(t, r.stdout)
	require.Equal(t, obj.Revision, o.Revision)
	meta, err := apistore.JSONKind{}.Meta(o.Value)
	require.NoError(t, err)
	require.Equal(t, got.meta, meta, "get prints the metadata")
	require.NotNil(t, meta.Deletion, "and the deletion mark")

	for part, want := range map[string]string{
		"spec":     `{"replicas":2}`,
		"status":   `{"observedGeneration":1,"status":{"ready":1}}`,
		"metadata": mustJSON(t, got.meta),
	} {
		r = ctl(t, url, "", "get", "-o", part, "k")
		require.Equal(t, exitOK, r.code, "%s: %s", part, r.stderr)
		require.Equal(t, want+"\n", r.stdout, part)
	}

	_, err = m.Create(t.Context(), "plain", value(`[1,2]`))
	require.NoError(t, err)
	r = runAs(t, url, "", "get", "-o", "spec", "plain")
	require.Equal(t, exitError, r.code)
	require.Regexp(t, `^convergectl: invalid input: plain: the value is no resource: [^\n]+\n$`, r.stderr)
	require.Empty(t, r.stdout)
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// racing is the store below the layer with a write of another program
// slipped in after the first read of a key, as a controller writing its
// status would.
type racing struct {
	store.Store[value]
	once  sync.Once
	write func()
}

func (r *racing) Get(ctx context.Context, key string) (store.Object[value], error) {
	obj, err := r.Store.Get(ctx, key)
	r.once.Do(r.write)
	return obj, err
}

// TestApplyRetriesWhenAWriteSlipsInAndKeepsThatWritesStatus: a write
// between apply's read and its compare-and-swap makes the swap conflict;
// apply reads again and writes FILE's spec over the status and finalizer
// that write left.
func TestApplyRetriesWhenAWriteSlipsInAndKeepsThatWritesStatus(t *testing.T) {
	ctx := t.Context()
	m := store.NewMemory[value]()
	t.Cleanup(func() { _ = m.Close() })
	first, err := m.Create(ctx, "k", value(`{"metadata":{"generation":1},"spec":{"n":1}}`))
	require.NoError(t, err)
	var raced error
	r := &racing{Store: m, write: func() {
		_, raced = m.Update(ctx, "k", value(`{"metadata":{"generation":1,"finalizers":["ctl/cleanup"]},"spec":{"n":1},"status":{"ready":true}}`), first.Revision)
	}}
	layer, err := apistore.New[value](r, apistore.JSONKind{})
	require.NoError(t, err)
	url := serveStore(t, layer)

	res := runAs(t, url, `{"spec":{"n":2}}`, "apply", "k")
	require.Equal(t, exitOK, res.code, res.stderr)
	require.NoError(t, raced)
	_, got := stored(t, m, "k")
	require.JSONEq(t, `{"n":2}`, got.spec)
	require.Equal(t, map[string]string{"status": `{"ready":true}`}, got.status, "the status written in between is kept")
	require.Equal(t, []string{"ctl/cleanup"}, got.meta.Finalizers, "the finalizer written in between is kept")
	require.Equal(t, int64(2), got.meta.Generation)
}

// TestApplyOfAResourceComputesWhatTheLayerWouldOnAServerWithoutIt: served
// without the layer, apply still writes FILE's spec over the stored
// status, with the generation the layer would give; nothing else enforces
// the layer's rules there.
func TestApplyOfAResourceComputesWhatTheLayerWouldOnAServerWithoutIt(t *testing.T) {
	m, url := serve(t)
	r := runAs(t, url, `{"spec":{"n":1},"status":{"forged":true}}`, "apply", "k")
	require.Equal(t, exitOK, r.code, r.stderr)
	obj, got := stored(t, m, "k")
	require.Equal(t, int64(1), got.meta.Generation)
	require.Empty(t, got.status)
	_, err := m.Update(t.Context(), "k", value(`{"metadata":{"generation":1},"spec":{"n":1},"status":{"ready":true}}`), obj.Revision)
	require.NoError(t, err)
	for _, step := range []struct {
		spec string
		want int64
	}{{`{"n":1.0}`, 1}, {`{"n":2}`, 2}} {
		r = runAs(t, url, `{"metadata":{"generation":7},"spec":`+step.spec+`}`, "apply", "k")
		require.Equal(t, exitOK, r.code, r.stderr)
		_, got = stored(t, m, "k")
		require.Equal(t, step.want, got.meta.Generation, step.spec)
		require.Equal(t, map[string]string{"status": `{"ready":true}`}, got.status, "apply keeps the status")
	}
}
