package apistore_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
)

var (
	modelKeys     = []string{"a", "b", "c"}
	finalizerSets = [][]string{nil, {"f1"}, {"f2"}, {"f1", "f2"},
		{apistore.ForegroundFinalizer}, {"f1", apistore.OrphanFinalizer}, {apistore.OrphanFinalizer, "f2"},
		{apistore.OrphanFinalizer, apistore.ForegroundFinalizer}}
	propagations = []apistore.Propagation{apistore.Background, apistore.Foreground, apistore.Orphan, ""}
)

// shaped is the shape of the fuzz test's values.
type shaped struct {
	Metadata apistore.Meta `json:"metadata"`
	Spec     struct {
		V int `json:"v"`
	} `json:"spec"`
	Status struct {
		S int `json:"s"`
	} `json:"status"`
}

func value(spec, status int, finalizers []string) json.RawMessage {
	var v shaped
	v.Metadata.Finalizers, v.Spec.V, v.Status.S = finalizers, spec, status
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // the test's own shape always encodes
	}
	return b
}

// modelRun drives the layer over a memory store and the model with the
// same steps.
type modelRun struct {
	t   *testing.T
	m   model
	mem *store.Memory[json.RawMessage]
	s   *apistore.Store[json.RawMessage]
}

// step runs one step, decoded from op, key and arg, on both, and returns
// how the layer's answer differs from the model's.
func (r *modelRun) step(op, key, arg byte) error {
	ctx := r.t.Context()
	k := modelKeys[int(key)%len(modelKeys)]
	o := r.m.objects[k]
	rev := int64(1)
	if o != nil {
		rev = o.rev
		if arg&0x10 != 0 {
			rev-- // a writer that read an older object
		}
	}
	fins := finalizerSets[int(arg>>2)%len(finalizerSets)]
	spec := int(arg % 3)
	var want outcome
	var err error
	flag := false
	switch op % 7 {
	case 0:
		want = r.m.create(k, spec, int(arg%2), fins)
		_, err = r.s.Create(ctx, k, value(spec, int(arg%2), fins))
	case 1:
		want = r.m.update(k, rev, spec, fins)
		_, err = r.s.Update(ctx, k, value(spec, 9, fins), rev)
		flag = want.flag
	case 2:
		want = r.m.update(k, rev, spec, fins)
		_, flag, err = r.s.Replace(ctx, k, value(spec, 9, fins), rev)
	case 3:
		want = r.m.updateStatus(k, rev, int(arg%4))
		_, err = r.s.UpdateStatus(ctx, k, value(7, int(arg%4), []string{"x"}), rev)
	case 4:
		p := propagations[int(arg)%len(propagations)]
		want = r.m.deleteWith(k, rev, p, time.Now())
		_, flag, err = r.s.DeleteWith(ctx, k, rev, p)
	case 5:
		return r.rawSpec(k, spec)
	case 6:
		return r.removeFinalizer(k, rev)
	}
	if err := want.check(err); err != nil {
		return err
	}
	if err == nil && flag != want.flag {
		return fmt.Errorf("flag %v, want %v", flag, want.flag)
	}
	return nil
}

// rawSpec changes the spec of key below the layer (if key exists), keeping
// the stored metadata and status: another program's write.
func (r *modelRun) rawSpec(k string, spec int) error {
	o := r.m.objects[k]
	if o == nil {
		return nil
	}
	ctx := r.t.Context()
	cur, err := r.mem.Get(ctx, k)
	if err != nil {
		return err
	}
	m, err := apistore.JSONKind{}.Meta(cur.Value)
	if err != nil {
		return err
	}
	v, err := apistore.JSONKind{}.WithMeta(value(spec, o.status, nil), m)
	if err != nil {
		return err
	}
	r.m.rawSpec(k, spec)
	_, err = r.mem.Update(ctx, k, v, cur.Revision)
	return err
}

// removeFinalizer removes the first finalizer of key with an Update, as a
// controller's cleanup does.
func (r *modelRun) removeFinalizer(k string, rev int64) error {
	spec, fins := 0, []string(nil)
	if o := r.m.objects[k]; o != nil && len(o.finalizers) > 0 {
		spec, fins = o.spec, o.finalizers[1:]
	}
	want := r.m.update(k, rev, spec, fins)
	_, err := r.s.Update(r.t.Context(), k, value(spec, 9, fins), rev)
	return want.check(err)
}

// compare checks that the layer's store holds what the model holds, and
// the model's invariants.
func (r *modelRun) compare() error {
	ctx := r.t.Context()
	if rev, err := r.mem.Revision(ctx); err != nil || rev != r.m.rev {
		return fmt.Errorf("store at revision %d (%v), model at %d", rev, err, r.m.rev)
	}
	for _, k := range modelKeys {
		o := r.m.objects[k]
		obj, err := r.s.Get(ctx, k)
		if o == nil {
			if !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("%s: Get returned %v, the model has no object", k, err)
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("%s: %v", k, err)
		}
		var got shaped
		if err := json.Unmarshal(obj.Value, &got); err != nil {
			return fmt.Errorf("%s: %v", k, err)
		}
		if err := o.same(obj, got); err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
	}
	return nil
}

// same compares an object of the model with the stored one.
func (o *modelObject) same(obj store.Object[json.RawMessage], got shaped) error {
	md := got.Metadata
	switch {
	case obj.Revision != o.rev || obj.CreateRevision != o.created:
		return fmt.Errorf("revisions %d (created %d), want %d (created %d)", obj.Revision, obj.CreateRevision, o.rev, o.created)
	case got.Spec.V != o.spec || got.Status.S != o.status:
		return fmt.Errorf("spec %d status %d, want %d and %d", got.Spec.V, got.Status.S, o.spec, o.status)
	case md.Generation != o.gen:
		return fmt.Errorf("generation %d, want %d", md.Generation, o.gen)
	case !slices.Equal(md.Finalizers, o.finalizers):
		return fmt.Errorf("finalizers %q, want %q", md.Finalizers, o.finalizers)
	case (md.Deletion == nil) != (o.mark == nil):
		return fmt.Errorf("mark %+v, want %+v", md.Deletion, o.mark)
	case md.Deletion != nil && (md.Deletion.Revision != o.mark.Revision || md.Deletion.Propagation != o.mark.Propagation || !md.Deletion.Time.Equal(o.mark.Time)):
		return fmt.Errorf("mark %+v, want %+v", *md.Deletion, *o.mark)
	case o.mark != nil && len(o.finalizers) == 0:
		return errors.New("the model holds a marked object without finalizers")
	}
	return nil
}

// FuzzStoreAgainstModel runs sequences of creates, spec, status and raw
// writes, deletes with every propagation and finalizer removals, at the
// current revision or a stale one, on a few keys, through the layer over
// a memory store (which checks that nothing it handed out is changed in
// place), and checks after every step that the layer answered and the
// store holds what the model of the package doc says.
func FuzzStoreAgainstModel(f *testing.F) {
	f.Add([]byte{0, 0, 4, 4, 0, 0, 6, 0, 0, 0, 0, 0})    // create with f1, delete, remove it, create again
	f.Add([]byte{0, 1, 12, 4, 1, 1, 1, 1, 13, 2, 1, 4})  // add a finalizer after the mark, then remove them
	f.Add([]byte{0, 2, 1, 5, 2, 2, 1, 2, 1, 3, 2, 3})    // raw spec write, then generations
	f.Add([]byte{0, 0, 0, 4, 0, 1, 0, 0, 2, 4, 0, 2})    // foreground and orphan on objects without finalizers
	f.Add([]byte{0, 0, 4, 1, 0, 20, 3, 0, 16, 4, 0, 17}) // stale writers
	f.Add([]byte{0, 0, 20, 4, 0, 0, 0, 1, 16, 4, 1, 2})  // background over the orphan finalizer, orphan over the foreground one
	f.Add([]byte{0, 0, 24, 4, 0, 3, 0, 1, 28, 1, 2, 28}) // no propagation keeps the object's own; both are refused
	rng := rand.New(rand.NewPCG(1, 2))
	for range 8 {
		seed := make([]byte, 240)
		for i := range seed {
			seed[i] = byte(rng.Uint32())
		}
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, steps []byte) {
		if len(steps) > 600 {
			steps = steps[:600]
		}
		synctest.Test(t, func(t *testing.T) {
			mem := store.NewMemory[json.RawMessage](store.WithMutationCheck(nil))
			s, err := apistore.New[json.RawMessage](mem, apistore.JSONKind{})
			if err != nil {
				t.Fatal(err)
			}
			r := &modelRun{t: t, m: model{objects: map[string]*modelObject{}}, mem: mem, s: s}
			for i := 0; i+2 < len(steps); i += 3 {
				if err := r.step(steps[i], steps[i+1], steps[i+2]); err != nil {
					t.Fatalf("step %d (%v): %v", i/3, steps[i:i+3], err)
				}
				if err := r.compare(); err != nil {
					t.Fatalf("after step %d (%v): %v", i/3, steps[i:i+3], err)
				}
			}
		})
	})
}
