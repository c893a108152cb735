package manager_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/converge-go/converge/reconcile/manager"
)

// cacheWarmer is a runnable that is not ready until it has done its first
// pass, and that names itself for logs and health output.
type cacheWarmer struct{ warm chan struct{} }

func (c *cacheWarmer) Name() string { return "cache-warmer" }

func (c *cacheWarmer) Run(ctx context.Context) error {
	close(c.warm) // the first pass is done
	<-ctx.Done()
	return nil
}

func (c *cacheWarmer) Ready() error {
	select {
	case <-c.warm:
		return nil
	default:
		return errors.New("cache cold")
	}
}

func ExampleManager() {
	m, err := manager.New(manager.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	warmer := &cacheWarmer{warm: make(chan struct{})}
	if err := m.Add(warmer); err != nil {
		fmt.Println(err)
		return
	}

	// In a program: http.Handle("/readyz", m.Readyz()) and the same for
	// /healthz, then m.Run(ctx) with a context cancelled on SIGTERM.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- m.Run(ctx) }()
	<-warmer.warm

	rec := httptest.NewRecorder()
	m.Readyz().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	fmt.Print(rec.Code, " ", rec.Body.String())

	cancel()
	fmt.Println("stopped:", <-done)
	// Output:
	// 200 ok
	// stopped: <nil>
}

func ExampleManager_Run_fatalError() {
	m, _ := manager.New(manager.Options{})
	_ = m.Add(manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done() // stopped by the other runnable's failure
		return ctx.Err()
	}))
	_ = m.Add(manager.RunnableFunc(func(context.Context) error {
		return errors.New("listener closed")
	}))

	err := m.Run(context.Background())
	fmt.Println(err)
	// Output:
	// manager: runnable "runnable-2": listener closed
}
