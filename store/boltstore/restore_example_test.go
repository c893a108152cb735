package boltstore_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/converge-go/converge/store/boltstore"
	"github.com/converge-go/converge/store/snapshot"
)

// A store file damaged beyond use is recovered from its store's latest
// snapshot in a directory, which a snapshot.Saver keeps; a file that no
// longer tells its identity is recovered only from a snapshot named.
func ExampleOpenOrRecover() {
	dir, err := os.MkdirTemp("", "boltstore-recover")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	path, snapshots := filepath.Join(dir, "state.db"), filepath.Join(dir, "snapshots")

	s, err := boltstore.Open[*Config](path)
	if err != nil {
		log.Fatal(err)
	}
	s.Create(ctx, "apps/web", &Config{Replicas: 2, Image: "web:1"})
	os.Mkdir(snapshots, 0o700)
	snapshot.WriteFile(ctx, filepath.Join(snapshots, "1.snap"), snapshot.Typed(s, nil))
	s.Create(ctx, "apps/db", &Config{Replicas: 1, Image: "db:1"}) // after the snapshot
	s.Close()
	os.Truncate(path, 4096) // the file loses all but its first page

	s, rec, err := boltstore.OpenOrRecover[*Config](path, snapshots)
	if errors.Is(err, snapshot.ErrIdentity) {
		fmt.Println("refused: no snapshot is known to be the damaged store's")
		s, rec, err = boltstore.OpenOrRecover[*Config](path, filepath.Join(snapshots, "1.snap"))
	}
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	fmt.Println("recovered from", filepath.Base(rec.Snapshot), "at revision", rec.Restored.Snapshot.Revision)
	if from, through, ok := rec.Lost(); ok {
		fmt.Println("lost revisions", from, "to", through)
	} else {
		fmt.Println("the damaged file does not say what was lost")
	}
	objs, rev, _ := s.List(ctx, "")
	for _, o := range objs {
		fmt.Println(o.Key, o.Value.Image)
	}
	fmt.Println("revision", rev, "= 1 + the bump:", rev == 1+boltstore.DefaultRevisionBump)
	// Output:
	// refused: no snapshot is known to be the damaged store's
	// recovered from 1.snap at revision 1
	// the damaged file does not say what was lost
	// apps/web web:1
	// revision 1000000001 = 1 + the bump: true
}
