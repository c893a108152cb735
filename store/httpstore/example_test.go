package httpstore_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/httpstore"
)

type Job struct {
	Command string `json:"command"`
}

// A daemon serves its store; another process reads and writes it through
// a Client, which is a store.Store.
func ExampleNewHandler() {
	ctx := context.Background()
	m := store.NewMemory[*Job]()
	defer m.Close()
	h, err := httpstore.NewHandler[*Job](m, httpstore.WithReadWriteToken("s3cret"))
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(h) // in production: httpstore.NewServer(addr, h)
	defer srv.Close()

	c, err := httpstore.New[*Job](srv.URL, httpstore.WithToken("s3cret"))
	if err != nil {
		panic(err)
	}
	defer c.Close()
	obj, err := c.Create(ctx, "jobs/backup", &Job{Command: "tar czf /tmp/b.tgz /etc"})
	if err != nil {
		panic(err)
	}
	_, err = c.Update(ctx, "jobs/backup", &Job{Command: "true"}, obj.Revision-1)
	fmt.Println("stale update is a conflict:", errors.Is(err, store.ErrConflict))
	got, err := m.Get(ctx, "jobs/backup")
	if err != nil {
		panic(err)
	}
	fmt.Println("the daemon's store holds:", got.Value.Command)
	// Output:
	// stale update is a conflict: true
	// the daemon's store holds: tar czf /tmp/b.tgz /etc
}

// A read-only token reads but cannot write.
func ExampleWithReadOnlyToken() {
	ctx := context.Background()
	m := store.NewMemory[*Job]()
	defer m.Close()
	h, err := httpstore.NewHandler[*Job](m, httpstore.WithReadWriteToken("admin"), httpstore.WithReadOnlyToken("viewer"))
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	viewer, err := httpstore.New[*Job](srv.URL, httpstore.WithToken("viewer"))
	if err != nil {
		panic(err)
	}
	defer viewer.Close()
	_, err = viewer.Create(ctx, "jobs/x", &Job{Command: "rm -rf /"})
	fmt.Println("forbidden:", errors.Is(err, httpstore.ErrForbidden))
	_, rev, err := viewer.List(ctx, "jobs/")
	fmt.Println("list works:", err == nil, "revision", rev)
	// Output:
	// forbidden: true
	// list works: true revision 0
}

// A watch over HTTP delivers the changes in order, like any store's.
func ExampleClient_Watch() {
	ctx := context.Background()
	m := store.NewMemory[*Job]()
	defer m.Close()
	h, err := httpstore.NewHandler[*Job](m)
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	c, err := httpstore.New[*Job](srv.URL)
	if err != nil {
		panic(err)
	}
	defer c.Close()

	w, err := c.Watch(ctx, "jobs/", 0)
	if err != nil {
		panic(err)
	}
	defer w.Stop()
	obj, err := m.Create(ctx, "jobs/a", &Job{Command: "date"})
	if err != nil {
		panic(err)
	}
	if _, err := m.Delete(ctx, "jobs/a", obj.Revision); err != nil {
		panic(err)
	}
	for range 2 {
		ev := <-w.Events()
		fmt.Println(ev.Type, ev.Object.Key, ev.Object.Revision)
	}
	// Output:
	// Created jobs/a 1
	// Deleted jobs/a 2
}

// NewServer gives an *http.Server the timeouts a store server needs.
func ExampleNewServer() {
	m := store.NewMemory[*Job]()
	defer m.Close()
	h, err := httpstore.NewHandler[*Job](m)
	if err != nil {
		panic(err)
	}
	srv := httpstore.NewServer("127.0.0.1:8080", h)
	fmt.Println(srv.ReadHeaderTimeout, srv.IdleTimeout)
	// Then: srv.ListenAndServe(), or srv.ListenAndServeTLS(cert, key).
	// Output:
	// 5s 2m0s
}
