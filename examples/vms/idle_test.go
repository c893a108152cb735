package main

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/reconcile/reconciletest"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/faultstore"
)

// TestTheVMsControllerGoesIdleOnceConverged: once its VMs run at their
// sizes, the operator written with the external kit reconciles and writes
// nothing (reconciletest's CheckIdle), though its drift source polls the
// API and its dependency is checked all along: a poll that finds every VM
// as the reconciler last made it wakes no key, and reconciling every VM
// again changes neither the store nor the VMs.
func TestTheVMsControllerGoesIdleOnceConverged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := reconciletest.NewEnv(t)
		api := newVMAPI()
		// The API is called in process, so that the bubble's clock and
		// its waits reach it (a loopback socket is outside the bubble).
		client := &vms{base: "http://vms.test", http: &http.Client{Transport: handlerTransport{api}}}
		op, err := newOperator(api, client, reconciletest.Wrap(env, store.NewMemory[*VM](), faultstore.Options{}), env.Metrics())
		if err != nil {
			t.Fatal(err)
		}
		sizes := map[string]int{"web-1": 1, "web-2": 2, "db-1": 4}
		for name, size := range sizes {
			if _, err := resource.PutSpec(t.Context(), op.s, "vms/"+name, VMSpec{Size: size}); err != nil {
				t.Fatal(err)
			}
		}
		env.Start(op.c)
		world := func() any {
			api.mu.Lock()
			defer api.mu.Unlock()
			got := map[string]int{}
			for id, vm := range api.vms {
				got[id] = vm.Size
			}
			return got
		}
		env.CheckIdle(time.Second, world)
		posts, n := api.counts()
		if posts != len(sizes) || n != len(sizes) {
			t.Fatalf("%d POSTs and %d VMs, want %d of each", posts, n, len(sizes))
		}
		for name, size := range sizes {
			obj, err := op.s.Get(t.Context(), "vms/"+name)
			if err != nil || obj.Value.Status.Size != size {
				t.Fatalf("vms/%s: %+v, %v: want it at size %d", name, obj.Value, err, size)
			}
		}
	})
}

// handlerTransport serves each request by calling the handler in the
// caller's goroutine.
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	w := httptest.NewRecorder()
	t.h.ServeHTTP(w, r)
	return w.Result(), nil
}
