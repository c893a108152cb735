package reconciletest_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/internal/pipenet"
	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/kit/owners"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/reconcile/reconciletest"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/faultstore"
	"github.com/converge-go/converge/store/httpstore"
)

type (
	familySpec   struct{ Size int }
	familyStatus struct{ Children int }
	family       = *resource.Resource[familySpec, familyStatus]
)

// ensureChild is the reconciler of an owner under "owners/" that ensures
// its child under "children/" with store.CreateOrUpdate, building the
// child afresh at every reconcile as controllers do, and records in its
// status that it did. Its controller is woken by its children's changes
// (owners.Source). Through writes the child through the request's store
// if viaRequest, else through s itself.
func ensureChild(s store.Store[family], viaRequest bool) reconcile.Reconciler[family] {
	return reconcile.ReconcilerFunc[family](func(ctx context.Context, req reconcile.Request[family]) (reconcile.Result, error) {
		if req.Deleted || req.Deleting {
			return reconcile.Result{}, nil
		}
		w := s
		if viaRequest {
			w = req.Store
		}
		child := "children/" + strings.TrimPrefix(req.Key, "owners/")
		_, err := store.CreateOrUpdate(ctx, w, child, func(cur family, exists bool) (family, error) {
			next := &resource.Resource[familySpec, familyStatus]{Spec: familySpec{Size: req.Object.Value.Spec.Size}}
			next.Generation = 1
			if exists {
				next.Meta = cur.Meta // the server's, as read
				next.Status, next.ObservedGeneration = cur.Status, cur.ObservedGeneration
			}
			next.Owners = []apistore.Owner{{Key: req.Key, UID: req.Object.CreateRevision, Block: true}}
			return next, nil
		})
		if err != nil {
			return reconcile.Result{}, err
		}
		_, err = resource.WriteStatus(ctx, req.Store, req.Object, familyStatus{Children: 1})
		return reconcile.Result{}, err
	})
}

// familyBackend makes the store an ensure-child controller runs over,
// inside a synctest bubble, with count put over the store that keeps the
// objects (below the API-server layer, if any) to count its writes.
type familyBackend struct {
	name string
	open func(t *testing.T, count func(store.Store[family]) store.Store[family]) store.Store[family]
}

type counter = func(store.Store[family]) store.Store[family]

func familyBackends() []familyBackend {
	kind := resource.Kind[familySpec, familyStatus]{}
	memory := func(t *testing.T) *store.Memory[family] {
		m := store.NewMemory[family]()
		t.Cleanup(func() { _ = m.Close() })
		return m
	}
	layer := func(t *testing.T, s store.Store[family]) store.Store[family] {
		l, err := apistore.New(s, kind)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	return []familyBackend{
		{"memory", func(t *testing.T, count counter) store.Store[family] { return count(memory(t)) }},
		{"layer over memory", func(t *testing.T, count counter) store.Store[family] { return layer(t, count(memory(t))) }},
		{"layer over a View", func(t *testing.T, count counter) store.Store[family] {
			raw := store.NewMemory[[]byte]()
			t.Cleanup(func() { _ = raw.Close() })
			return layer(t, count(store.NewView[family](raw, nil)))
		}},
		{"layer served over HTTP", func(t *testing.T, count counter) store.Store[family] {
			h, err := httpstore.NewHandler(layer(t, count(memory(t))))
			if err != nil {
				t.Fatal(err)
			}
			pn := pipenet.New()
			srv := &http.Server{Handler: h}
			go func() { _ = srv.Serve(pn) }()
			t.Cleanup(func() { _ = srv.Close() })
			hc := pn.Client()
			t.Cleanup(hc.CloseIdleConnections)
			c, err := httpstore.New[family]("http://pipe.localhost", httpstore.WithHTTPClient(hc))
			if err != nil {
				t.Fatal(err)
			}
			return c
		}},
	}
}

// TestAControllerEnsuringItsChildrenGoesIdleOnceConverged: an owner whose
// reconcile ensures its child with store.CreateOrUpdate, and whose
// controller is woken by its children's changes, goes idle once every
// child is in place, on memory, through the API-server layer, and over
// HTTP, whether it writes through the request's store or the store
// itself: a CreateOrUpdate that changes nothing writes nothing, so it
// makes no event to wake the owner again. Before writes that change
// nothing were skipped, it reconciled and wrote for ever.
func TestAControllerEnsuringItsChildrenGoesIdleOnceConverged(t *testing.T) {
	for _, b := range familyBackends() {
		for _, viaRequest := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/request store %t", b.name, viaRequest), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					env := reconciletest.NewEnv(t)
					s := b.open(t, func(s store.Store[family]) store.Store[family] {
						return reconciletest.Wrap(env, s, faultstore.Options{})
					})
					for i := range 3 {
						_, err := resource.PutSpec(t.Context(), s, fmt.Sprint("owners/o", i), familySpec{Size: i + 1})
						if err != nil {
							t.Fatal(err)
						}
					}
					c, err := reconcile.New(s, ensureChild(s, viaRequest), reconcile.Options[family]{
						Name: "families", Prefix: "owners/", Metrics: env.Metrics(),
						Sources: []reconcile.Source{owners.Source(s, "children/", resource.Kind[familySpec, familyStatus]{})},
					})
					if err != nil {
						t.Fatal(err)
					}
					env.Start(c)
					env.CheckIdle(time.Minute, nil)
					children, _, err := s.List(t.Context(), "children/")
					if err != nil || len(children) != 3 {
						t.Fatalf("children: %d, %v; want 3", len(children), err)
					}
				})
			})
		}
	}
}
