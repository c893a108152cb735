package snapshot_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/snapshot"
)

// A snapshot of a store, written and read back.
func Example() {
	ctx := context.Background()
	s := store.NewMemory[[]byte]()
	s.Create(ctx, "app/web", []byte(`{"replicas":3}`))
	s.Create(ctx, "app/db", []byte(`{"replicas":1}`))

	var buf bytes.Buffer
	info, err := snapshot.Save(ctx, &buf, snapshot.Bytes(s))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("saved", info.Count, "objects at revision", info.Revision)

	_, objs, err := snapshot.Read(&buf)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, o := range objs {
		fmt.Printf("%s %s\n", o.Key, o.Value)
	}
	// Output:
	// saved 2 objects at revision 2
	// app/db {"replicas":1}
	// app/web {"replicas":3}
}

// The good snapshot of a store with the highest revision, past a damaged
// one.
func ExampleLatest() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "snapshots")
	defer os.RemoveAll(dir)
	type spec struct{ Replicas int }
	s := store.NewMemory[spec]()
	s.Create(ctx, "app/web", spec{Replicas: 3})
	snapshot.WriteFile(ctx, filepath.Join(dir, "1.snap"), snapshot.Typed[spec](s, nil))
	s.Create(ctx, "app/db", spec{Replicas: 1})
	snapshot.WriteFile(ctx, filepath.Join(dir, "2.snap"), snapshot.Typed[spec](s, nil))
	os.Truncate(filepath.Join(dir, "2.snap"), 100) // damage

	id, _ := s.Identity(ctx)
	found, err := snapshot.Latest(dir, id)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(filepath.Base(found.Path), "at revision", found.Info.Revision)
	for _, skipped := range found.Skipped {
		fmt.Println("skipped", filepath.Base(skipped.Path))
	}
	// Output:
	// 1.snap at revision 1
	// skipped 2.snap
}
