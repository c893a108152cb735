package debugpage_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/manager"
	"github.com/converge-go/converge/reconcile/observe/debugpage"
	"github.com/converge-go/converge/store"
)

// Mount the page on a Manager's HTTP server, beside /healthz and /readyz,
// with the manager's leadership.
func ExampleNew() {
	s := store.NewMemory[string]()
	c, err := reconcile.New(s, reconcile.ReconcilerFunc[string](func(ctx context.Context, req reconcile.Request[string]) (reconcile.Result, error) {
		return reconcile.Result{}, nil
	}), reconcile.Options[string]{Name: "web"})
	if err != nil {
		panic(err)
	}
	m, err := manager.New(manager.Options{Server: &manager.ServerOptions{Addr: "127.0.0.1:8080"}})
	if err != nil {
		panic(err)
	}
	m.Add(c)
	err = m.Handle("/debug/converge/", debugpage.New(debugpage.Options{IsLeader: m.IsLeader}, c))
	// m.Run(ctx) serves it; the page is at /debug/converge/ (HTML) and
	// /debug/converge/?format=json (JSON).
	fmt.Println("mounted:", err == nil)
	// Output:
	// mounted: true
}

// Tools read the same page as JSON: states and outcomes by name, times as
// RFC 3339, and the log attributes to search for.
func ExampleHandler_json() {
	ctx, stop := context.WithCancel(context.Background())
	s := store.NewMemory[string]()
	s.Create(ctx, "web/a", "v1")
	c, err := reconcile.New(s, reconcile.ReconcilerFunc[string](func(ctx context.Context, req reconcile.Request[string]) (reconcile.Result, error) {
		return reconcile.Result{}, reconcile.Terminal(errors.New("image not found"))
	}), reconcile.Options[string]{Name: "web"})
	if err != nil {
		panic(err)
	}
	done := make(chan error)
	go func() { done <- c.Run(ctx) }()
	rev, _ := s.Revision(ctx)
	c.WaitForRevision(ctx, rev)

	h := debugpage.New(debugpage.Options{}, c)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/debug/converge/?format=json&prefix=web/", nil))
	var page struct {
		Controllers []struct {
			Name string
			Keys []struct {
				Key, State, LastOutcome, LastError, Log string
			}
		}
	}
	json.Unmarshal(rec.Body.Bytes(), &page)
	for _, k := range page.Controllers[0].Keys {
		fmt.Println(k.Key, k.State, k.LastOutcome, k.LastError)
		fmt.Println(k.Log)
	}
	stop()
	<-done
	// Output:
	// web/a idle terminal terminal: image not found
	// controller=web key=web/a revision=1
}
