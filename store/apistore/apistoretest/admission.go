package apistoretest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/stretchr/testify/require"
)

// The clauses of admission: a kind's rules run where objects are written.

// checkedPrefix is the prefix of the keys the suite's kind rules: its
// names (the key after the prefix) are lower-case letters, digits and
// '-', its spec is {"size": an integer ≥ 1, "mode": "fast" (the default)
// or "safe"}, its status {"ready": a boolean}. Keys elsewhere are of no
// rule.
const checkedPrefix = "checked/"

// LayerOptions returns the options the suite's layer is made with
// (apistore.New(raw, apistore.JSONKind{}, LayerOptions()...)): the
// Admission of the kind its admission clauses write under "checked/".
// A Serve of Options must put the layer with them.
func LayerOptions() []apistore.Option[json.RawMessage] {
	return []apistore.Option[json.RawMessage]{apistore.WithAdmission(checkedPrefix, apistore.Admission[json.RawMessage]{
		Default:        defaultChecked,
		Validate:       validateChecked,
		ValidateStatus: validateCheckedStatus,
		ValidateKey:    validateCheckedKey,
	})}
}

// checkedName is what a name under checkedPrefix must match.
var checkedName = regexp.MustCompile(`^[a-z0-9-]{1,63}$`)

func validateCheckedKey(key string) error {
	if name := strings.TrimPrefix(key, checkedPrefix); !checkedName.MatchString(name) {
		return &apistore.FieldError{Field: "key", Reason: fmt.Sprintf("name %q: want lower-case letters, digits and '-'", name)}
	}
	return nil
}

// checkedObject is a value of the suite's kind, as its rules read it.
type checkedObject struct {
	Spec struct {
		Size *json.Number `json:"size"`
		Mode *string      `json:"mode"`
	} `json:"spec"`
	Status struct {
		Ready any `json:"ready"`
	} `json:"status"`
}

func decodeChecked(v json.RawMessage) (checkedObject, map[string]json.RawMessage, error) {
	var o checkedObject
	var members map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	if err := dec.Decode(&o); err != nil {
		return o, nil, &apistore.FieldError{Field: "spec", Reason: err.Error()}
	}
	if err := json.Unmarshal(v, &members); err != nil {
		return o, nil, &apistore.FieldError{Field: "spec", Reason: err.Error()}
	}
	return o, members, nil
}

func defaultChecked(v json.RawMessage) (json.RawMessage, error) {
	o, members, err := decodeChecked(v)
	if err != nil || o.Spec.Mode != nil {
		return v, err
	}
	spec := map[string]json.RawMessage{}
	if s, ok := members["spec"]; ok && string(s) != "null" {
		if err := json.Unmarshal(s, &spec); err != nil {
			return v, &apistore.FieldError{Field: "spec", Reason: "not an object"}
		}
	}
	spec["mode"] = json.RawMessage(`"fast"`)
	members["spec"], _ = json.Marshal(spec)
	return json.Marshal(members)
}

func validateChecked(v json.RawMessage) error {
	o, _, err := decodeChecked(v)
	if err != nil {
		return err
	}
	var errs []error
	if n, err := o.Spec.Size.Int64(); o.Spec.Size == nil || err != nil || n < 1 {
		errs = append(errs, apistore.FieldErrorf("spec.size", "want an integer of at least 1"))
	}
	if o.Spec.Mode == nil || *o.Spec.Mode != "fast" && *o.Spec.Mode != "safe" {
		errs = append(errs, apistore.FieldErrorf("spec.mode", `want "fast" or "safe"`))
	}
	return errors.Join(errs...)
}

func validateCheckedStatus(v json.RawMessage) error {
	o, _, err := decodeChecked(v)
	if err != nil {
		return err
	}
	if _, ok := o.Status.Ready.(bool); o.Status.Ready != nil && !ok {
		return apistore.FieldErrorf("status.ready", "want a boolean")
	}
	return nil
}

// requireRejected requires err to be the refusal of a rule naming field.
func requireRejected(t *testing.T, err error, what, field string) {
	t.Helper()
	requireIs(t, err, what, apistore.ErrRejected, store.ErrInvalid)
	require.Contains(t, err.Error(), field, "%s: the error names the field", what)
	requireField(t, err, what, field)
}

// requireField requires errors.As to find a FieldError of field in err.
func requireField(t *testing.T, err error, what, field string) {
	t.Helper()
	var fe *apistore.FieldError
	require.True(t, errors.As(err, &fe), "%s: errors.As finds the FieldError in %v", what, err)
	require.Equal(t, field, fe.Field, "%s: the FieldError's field", what)
}

func badSpecRefused(t *testing.T, s *subject) {
	ctx := t.Context()
	const key = checkedPrefix + "a"
	_, err := s.layer.Create(ctx, key, doc(nil, `{"size":0}`, ""))
	requireRejected(t, err, "Create of a bad spec", "spec.size")
	_, err = s.layer.Apply(ctx, key, doc(nil, `{"size":2,"mode":"slow"}`, ""))
	requireRejected(t, err, "Apply creating a bad spec", "spec.mode")
	_, err = s.layer.Get(ctx, key)
	requireIs(t, err, "a refused create stores nothing", store.ErrNotFound)

	obj := create(t, s, key, doc(fin("cleanup"), `{"size":1}`, `{"ready":true}`))
	before := revision(t, s)
	bad := doc(fin("cleanup"), `{"size":-3,"mode":"safe"}`, "")
	for op, write := range map[string]func() error{
		"Update":  func() error { _, err := s.layer.Update(ctx, key, bad, obj.Revision); return err },
		"Replace": func() error { _, _, err := s.layer.Replace(ctx, key, bad, obj.Revision); return err },
		"Apply":   func() error { _, err := s.layer.Apply(ctx, key, bad); return err },
	} {
		requireRejected(t, write(), op+" of a bad spec", "spec.size")
		unchanged(t, s, before, obj, op+" of a bad spec")
	}
	create(t, s, "other/a", doc(nil, `{"size":0}`, ""))
}

func badKeyRefused(t *testing.T, s *subject) {
	ctx := t.Context()
	for _, key := range []string{checkedPrefix + "Bad_Name", checkedPrefix + "a/b", checkedPrefix} {
		_, err := s.layer.Create(ctx, key, doc(nil, `{"size":1}`, ""))
		requireRejected(t, err, "Create of "+key, "key")
		_, err = s.layer.Apply(ctx, key, doc(nil, `{"size":1}`, ""))
		requireRejected(t, err, "Apply creating "+key, "key")
		_, err = s.raw.Get(ctx, key)
		requireIs(t, err, "a refused key stores nothing", store.ErrNotFound)
	}
	obj := create(t, s, checkedPrefix+"a-1", doc(nil, `{"size":1}`, ""))
	_, err := s.layer.Update(ctx, obj.Key, doc(nil, `{"size":2}`, ""), obj.Revision)
	require.NoError(t, err, "a name the rule admits")
	create(t, s, "other/Bad_Name", doc(nil, `{"size":1}`, ""))
}

func defaultsApplied(t *testing.T, s *subject) {
	ctx := t.Context()
	obj := create(t, s, checkedPrefix+"a", doc(nil, `{"size":1}`, ""))
	_, p := get(t, s, obj.Key)
	require.Equal(t, jsonOf(t, `{"size":1,"mode":"fast"}`), p.Spec, "Create fills the default before validating")
	require.Equal(t, int64(1), p.Meta.Generation)

	obj, err := s.layer.Update(ctx, obj.Key, doc(nil, `{"size":2}`, ""), obj.Revision)
	require.NoError(t, err)
	_, p = get(t, s, obj.Key)
	require.Equal(t, jsonOf(t, `{"size":2,"mode":"fast"}`), p.Spec, "Update fills the default")
	require.Equal(t, int64(2), p.Meta.Generation)

	apply(t, s, obj.Key, doc(nil, `{"size":2}`, ""))
	_, p = get(t, s, obj.Key)
	require.Equal(t, jsonOf(t, `{"size":2,"mode":"fast"}`), p.Spec, "Apply fills the default")
	require.Equal(t, int64(2), p.Meta.Generation, "a spec equal to the stored one once defaulted is no change")

	apply(t, s, checkedPrefix+"b", doc(nil, `{"size":3,"mode":"safe"}`, ""))
	_, p = get(t, s, checkedPrefix+"b")
	require.Equal(t, jsonOf(t, `{"size":3,"mode":"safe"}`), p.Spec, "a value stated is kept")
}

func statusRuleOnStatusWrites(t *testing.T, s *subject) {
	ctx := t.Context()
	_, err := s.layer.Create(ctx, checkedPrefix+"new", doc(nil, `{"size":1}`, `{"ready":"yes"}`))
	requireRejected(t, err, "Create of a bad status", "status.ready")
	obj := create(t, s, checkedPrefix+"a", doc(nil, `{"size":1}`, `{"ready":false}`))
	before := revision(t, s)
	_, err = s.layer.UpdateStatus(ctx, obj.Key, doc(nil, `{"size":1}`, `{"ready":"yes"}`), obj.Revision)
	requireRejected(t, err, "UpdateStatus of a bad status", "status.ready")
	unchanged(t, s, before, obj, "UpdateStatus of a bad status")
	_, err = s.layer.UpdateStatus(ctx, obj.Key, doc(nil, `{"size":-1}`, `{"ready":true}`), obj.Revision)
	require.NoError(t, err, "a status write is judged by the status rule alone (its spec is not written)")
	_, p := get(t, s, obj.Key)
	require.Equal(t, jsonOf(t, `{"ready":true}`), p.Status)
}

func legacySpecKept(t *testing.T, s *subject) {
	ctx := t.Context()
	key := checkedPrefix + "legacy"
	raw, err := s.raw.Create(ctx, key, doc(&apistore.Meta{Generation: 1, Finalizers: []string{"cleanup"}}, `{"size":0}`, ""))
	require.NoError(t, err)
	rev, marked, err := s.layer.DeleteWith(ctx, key, raw.Revision, apistore.Background)
	require.NoError(t, err, "a delete runs no rule")
	require.True(t, marked)
	obj, err := s.layer.UpdateStatus(ctx, key, doc(nil, `{"size":0}`, `{"ready":false}`), rev)
	require.NoError(t, err, "a status write over a spec stored before its rule")
	_, err = s.layer.Update(ctx, key, doc(fin("cleanup"), `{"size":-1}`, ""), obj.Revision)
	requireRejected(t, err, "a changed spec is judged", "spec.size")
	_, deleted, err := s.layer.Replace(ctx, key, doc(fin(), `{"size":0}`, ""), obj.Revision)
	require.NoError(t, err, "removing the finalizer of an object whose stored spec breaks its rule")
	require.True(t, deleted)
	gone(t, s, key)
}

// badMetadataCases are metadata the layer refuses, with the field each
// error must name.
var badMetadataCases = map[string]struct {
	md    apistore.Meta
	field string
}{
	"a finalizer with a newline": {apistore.Meta{Finalizers: []string{"a\nb"}}, "metadata.finalizers[0]"},
	"a 10 KB finalizer":          {apistore.Meta{Finalizers: []string{strings.Repeat("f", 10<<10)}}, "metadata.finalizers[0]"},
	"a duplicate finalizer":      {apistore.Meta{Finalizers: []string{"x", "y/z", "x"}}, "metadata.finalizers[2]"},
	"an empty finalizer":         {apistore.Meta{Finalizers: []string{""}}, "metadata.finalizers[0]"},
	"an uppercase prefix":        {apistore.Meta{Finalizers: []string{"Ex.com/f"}}, "metadata.finalizers[0]"},
	"two slashes":                {apistore.Meta{Finalizers: []string{"a/b/c"}}, "metadata.finalizers[0]"},
	"a name ending in a dash":    {apistore.Meta{Finalizers: []string{"ex.com/f-"}}, "metadata.finalizers[0]"},
	"a 64-character name":        {apistore.Meta{Finalizers: []string{strings.Repeat("n", 64)}}, "metadata.finalizers[0]"},
	"a duplicate owner":          {apistore.Meta{Owners: []apistore.Owner{{Key: "p", UID: 1}, {Key: "p", UID: 2}}}, "metadata.owners[1]"},
	"an owner without a key":     {apistore.Meta{Owners: []apistore.Owner{{Key: "", UID: 1}}}, "metadata.owners[0]"},
	"an owner without a UID":     {apistore.Meta{Owners: []apistore.Owner{{Key: "p"}}}, "metadata.owners[0]"},
}

func badMetadataRefused(t *testing.T, s *subject) {
	ctx := t.Context()
	good := apistore.Meta{Finalizers: []string{"cleanup", "example.com/db_drop.v2", apistore.OrphanFinalizer, strings.Repeat("n", 63)}}
	obj := create(t, s, "a", doc(&good, `{"n":1}`, ""))
	before := revision(t, s)
	for name, c := range badMetadataCases {
		v := doc(&c.md, `{"n":1}`, "")
		_, err := s.layer.Create(ctx, "new", v)
		requireIs(t, err, "Create with "+name, store.ErrInvalid)
		require.Contains(t, err.Error(), c.field, "Create with %s: the error names the field", name)
		requireField(t, err, "Create with "+name, c.field)
		require.NotErrorIs(t, err, apistore.ErrRejected, "metadata is the layer's, not a kind's admission")
		for op, write := range writes(ctx, s, "a", v, obj.Revision) {
			if op == "Delete" || op == "DeleteWith" {
				continue
			}
			err := write()
			requireIs(t, err, op+" with "+name, store.ErrInvalid)
			require.Contains(t, err.Error(), c.field, "%s with %s: the error names the field", op, name)
		}
		_, err = s.layer.Apply(ctx, "a", v)
		requireIs(t, err, "Apply with "+name, store.ErrInvalid)
		_, err = s.layer.Apply(ctx, "new", v)
		requireIs(t, err, "Apply creating with "+name, store.ErrInvalid)
		unchanged(t, s, before, obj, "writes with "+name)
		_, err = s.layer.Get(ctx, "new")
		requireIs(t, err, "a refused create stores nothing", store.ErrNotFound)
	}
}

func legacyMetadataRemovable(t *testing.T, s *subject) {
	ctx := t.Context()
	long := strings.Repeat("f", 10<<10)
	owners := []apistore.Owner{{Key: "p", UID: 1}, {Key: "p", UID: 1}}
	md := apistore.Meta{Generation: 1, Finalizers: []string{"bad name", long, "x", "x"}, Owners: owners}
	raw, err := s.raw.Create(ctx, "a", doc(&md, `{"n":1}`, ""))
	require.NoError(t, err, "a value stored before the layer's rules")

	obj, err := s.layer.UpdateStatus(ctx, "a", raw.Value, raw.Revision)
	require.NoError(t, err, "a status write over bad metadata already stored")
	md.Finalizers = []string{"bad name", "x", "x"}
	obj, err = s.layer.Update(ctx, "a", doc(&md, `{"n":2}`, ""), obj.Revision)
	require.NoError(t, err, "a write that removes one bad finalizer and keeps the others")
	before := revision(t, s)
	md.Finalizers = []string{"bad name", "x", "x", "x"}
	_, err = s.layer.Update(ctx, "a", doc(&md, `{"n":2}`, ""), obj.Revision)
	requireIs(t, err, "a third copy of a finalizer", store.ErrInvalid)
	md.Finalizers = []string{"bad name", "other name"}
	_, err = s.layer.Update(ctx, "a", doc(&md, `{"n":2}`, ""), obj.Revision)
	requireIs(t, err, "a new bad finalizer", store.ErrInvalid)
	unchanged(t, s, before, obj, "refused writes over legacy metadata")

	rev, marked, err := s.layer.DeleteWith(ctx, "a", obj.Revision, apistore.Foreground)
	require.NoError(t, err, "an object with bad metadata is deletable")
	require.True(t, marked)
	md.Finalizers, md.Owners = []string{apistore.ForegroundFinalizer}, owners[:1]
	obj, err = s.layer.Update(ctx, "a", doc(&md, `{"n":2}`, ""), rev)
	require.NoError(t, err, "removing the bad finalizers and an owner listed twice")
	md.Finalizers = nil
	_, deleted, err := s.layer.Replace(ctx, "a", doc(&md, `{"n":2}`, ""), obj.Revision)
	require.NoError(t, err)
	require.True(t, deleted, "removing the last finalizer deletes it")
	gone(t, s, "a")

	raw, err = s.raw.Create(ctx, "b", doc(&apistore.Meta{Generation: 1, Owners: owners}, `{"n":1}`, ""))
	require.NoError(t, err)
	_, err = s.layer.Delete(ctx, "b", raw.Revision)
	require.NoError(t, err, "an object without finalizers whose owners are bad is deleted")
	gone(t, s, "b")
}
