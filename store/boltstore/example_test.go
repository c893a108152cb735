package boltstore_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/converge-go/converge/store/boltstore"
)

// Config is the value type of the examples.
type Config struct {
	Replicas int    `json:"replicas"`
	Image    string `json:"image"`
}

// Open a store, write to it, close it, and find the writes, the revision and
// the watch history still there after reopening.
func Example() {
	dir, err := os.MkdirTemp("", "boltstore-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "state.db")
	ctx := context.Background()

	s, err := boltstore.Open[*Config](path)
	if err != nil {
		log.Fatal(err)
	}
	web, err := s.Create(ctx, "apps/web", &Config{Replicas: 2, Image: "web:1"})
	if err != nil {
		log.Fatal(err)
	}
	// Compare-and-swap: the update names the revision it read.
	if _, err := s.Update(ctx, "apps/web", &Config{Replicas: 3, Image: "web:2"}, web.Revision); err != nil {
		log.Fatal(err)
	}
	if err := s.Close(); err != nil {
		log.Fatal(err)
	}

	// A new process would do the same: open the file again.
	s, err = boltstore.Open[*Config](path)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	got, err := s.Get(ctx, "apps/web")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %d replicas of %s at revision %d\n", got.Key, got.Value.Replicas, got.Value.Image, got.Revision)

	// The history survived too: replay everything after revision 0.
	w, err := s.Watch(ctx, "apps/", 0)
	if err != nil {
		log.Fatal(err)
	}
	defer w.Stop()
	for range 2 {
		ev := <-w.Events()
		fmt.Printf("event at %d: %s now has %d replicas\n", ev.Object.Revision, ev.Object.Key, ev.Object.Value.Replicas)
	}
	// Output:
	// apps/web: 3 replicas of web:2 at revision 2
	// event at 1: apps/web now has 2 replicas
	// event at 2: apps/web now has 3 replicas
}

// Open with options: a shorter watch history and a smaller value limit.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "boltstore-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	s, err := boltstore.Open[*Config](filepath.Join(dir, "state.db"),
		boltstore.WithHistory(1000),
		boltstore.WithMaxValueSize(64<<10),
	)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	rev, err := s.Revision(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("a new store starts at revision", rev)
	// Output:
	// a new store starts at revision 0
}

// A second Open of a file that a Store holds fails with ErrLocked once the
// lock timeout has passed, instead of waiting forever.
func ExampleOpen_locked() {
	dir, err := os.MkdirTemp("", "boltstore-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "state.db")

	s, err := boltstore.Open[*Config](path)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	_, err = boltstore.Open[*Config](path, boltstore.WithLockTimeout(100*time.Millisecond))
	fmt.Println(errors.Is(err, boltstore.ErrLocked))
	// Output:
	// true
}
