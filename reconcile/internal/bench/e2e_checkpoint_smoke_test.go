package bench

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/boltstore"
)

// TestACheckpointedConvergeRunSettlesAndItsCheckpointLoadsEveryObject runs
// the end-to-end workload over 1,000 objects on converge with a checkpoint
// in a file (values in store.JSON, then in PairCodec), and checks that the
// run settles with one status write per object, that the checkpoint was
// written, and that the file, opened again, loads every object converged
// at the store's revision.
func TestACheckpointedConvergeRunSettlesAndItsCheckpointLoadsEveryObject(t *testing.T) {
	t.Run("json", func(t *testing.T) { testCheckpointedE2E(t) })
	t.Run("binary", func(t *testing.T) { testCheckpointedE2E(t, boltstore.WithCodec[*Pair](PairCodec{})) })
}

func testCheckpointedE2E(t *testing.T, opts ...boltstore.Option) {
	const objects, workers = 1000, 8
	ctx := context.Background()
	s := store.NewMemory[*Pair]()
	defer s.Close()
	keys := NewKeys(objects)
	if err := Populate(ctx, s, keys); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "checkpoint")
	r, cost, err := RunConvergeCheckpointed(s, keys, workers, path, time.Second, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckConverged(ctx, s, keys); err != nil {
		t.Fatal(err)
	}
	if r.Writes != objects || r.Settled <= 0 {
		t.Errorf("%d status writes, settled after %v; want %d, after a positive time", r.Writes, r.Settled, objects)
	}
	if cost.FinalWrites < 1 || cost.Failures != 0 {
		t.Errorf("%d checkpoint writes, %d failed; want at least one, none failed", cost.FinalWrites, cost.Failures)
	}

	cp, err := boltstore.OpenCheckpoint[*Pair](path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Close()
	st, err := cp.Load()
	if err != nil {
		t.Fatal(err)
	}
	rev, err := s.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Objects) != objects || st.Revision != rev {
		t.Fatalf("checkpoint holds %d objects at revision %d, want %d at the store's revision %d", len(st.Objects), st.Revision, objects, rev)
	}
	for _, obj := range st.Objects {
		if obj.Value.Status != obj.Value.Spec {
			t.Fatalf("checkpoint holds %q with Status %d != Spec %d", obj.Key, obj.Value.Status, obj.Value.Spec)
		}
	}
	t.Logf("%d checkpoint writes (%d once settled); file %d bytes", cost.FinalWrites, cost.Writes, cost.FileBytes)
}
