package browsertest

import (
	"context"
	"testing"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/manager"
	"github.com/converge-go/converge/reconcile/observe/debugpage"
)

// mount runs a Manager with c, serving the debug page over it on a
// loopback port, until the test ends (when beforeStop, if given, runs
// first); it returns the page's URL once the server listens.
func mount(t *testing.T, c *reconcile.Controller[string], beforeStop func()) string {
	m, err := manager.New(manager.Options{Server: &manager.ServerOptions{Addr: "127.0.0.1:0"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Add(c); err != nil {
		t.Fatal(err)
	}
	if err := m.Handle("/debug/converge/", debugpage.New(debugpage.Options{IsLeader: m.IsLeader}, c)); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() {
		if beforeStop != nil {
			beforeStop()
		}
		stop()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	var base string
	eventually(t, "the manager's server listens", func() (bool, string) {
		if a := m.Addr(); a != nil {
			base = "http://" + a.String() + "/debug/converge/"
			return true, ""
		}
		return false, "no address yet"
	})
	return base
}
