package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

// batchRefusalsPerWrite: a batch checks each write on its own, reports
// each refusal on its write with the error the single write would return,
// and lands the others, each seen once by a watch, in the batch's order.
func (suite) batchRefusalsPerWrite(t *testing.T, s store.Store[*Value]) {
	ctx := t.Context()
	a := mustCreate(t, s, "a", val(1))
	b := mustCreate(t, s, "b", val(2))
	c := mustCreate(t, s, "c", val(3))
	d := mustCreate(t, s, "d", val(4))
	e := mustCreate(t, s, "e", val(5))
	f := mustCreate(t, s, "f", val(6))
	lease := mustCreate(t, s, "lease", val(7))
	rev := mustRevision(t, s)
	w := mustWatch(t, s, "", rev)

	held := []store.Guard{{Key: "lease", Revision: lease.Revision}}
	broken := []store.Guard{{Key: "lease", Revision: lease.Revision + 100}}
	writes := []store.Write[*Value]{
		{Key: "new", Value: val(10)},                                     // lands
		{Key: "c", Value: val(11)},                                       // exists
		{Key: "a", Value: val(12), Revision: a.Revision},                 // lands
		{Key: "b", Value: val(13), Revision: b.Revision + 100},           // conflict
		{Key: "missing", Value: val(14), Revision: 1},                    // not found
		{Key: "d", Revision: d.Revision, Delete: true},                   // lands
		{Key: "e", Value: val(16), Revision: e.Revision, Guards: broken}, // guard
		{Key: "f", Value: val(17), Revision: f.Revision, Guards: held},   // lands
		{Key: "gone", Revision: 1, Delete: true},                         // not found
	}
	res, err := store.WriteBatch(ctx, s, writes)
	require.NoError(t, err)
	require.Len(t, res, len(writes), "one result per write")
	refusals := map[int]error{1: store.ErrExists, 3: store.ErrConflict, 4: store.ErrNotFound, 6: store.ErrGuardFailed, 8: store.ErrNotFound}
	var landed []int
	for i, r := range res {
		if want, ok := refusals[i]; ok {
			requireIs(t, r.Err, want, fmt.Sprintf("write %d (%q)", i, writes[i].Key))
			continue
		}
		require.NoError(t, r.Err, "write %d (%q)", i, writes[i].Key)
		require.Equal(t, writes[i].Key, r.Object.Key)
		require.Greater(t, r.Object.Revision, rev, "write %d takes a revision after the batch began", i)
		landed = append(landed, i)
	}
	requireBatchStored(t, s, writes, res, map[string]store.Object[*Value]{"b": b, "c": c, "e": e})
	last := int64(0)
	for _, i := range landed {
		ev := next(t, w)
		require.Equal(t, writes[i].Key, ev.Object.Key, "events come in the batch's order")
		require.Equal(t, res[i].Object.Revision, ev.Object.Revision)
		require.GreaterOrEqual(t, ev.Object.Revision, last)
		last = ev.Object.Revision
	}
	requireQuiet(t, s, w, mustRevision(t, s), "after the batch")
}

// requireBatchStored requires that every write that landed is what Get
// returns and that the keys in kept are as they were.
func requireBatchStored(t *testing.T, s store.Store[*Value], writes []store.Write[*Value], res []store.WriteResult[*Value], kept map[string]store.Object[*Value]) {
	t.Helper()
	for i, r := range res {
		if r.Err != nil {
			continue
		}
		got, err := s.Get(t.Context(), writes[i].Key)
		if writes[i].Delete {
			requireIs(t, err, store.ErrNotFound, "Get of a key the batch deleted")
			continue
		}
		require.NoError(t, err)
		require.Equal(t, *writes[i].Value, *got.Value, "Get(%q) returns what the batch wrote", writes[i].Key)
		require.Equal(t, r.Object.Revision, got.Revision)
		require.Equal(t, r.Object.CreateRevision, got.CreateRevision)
	}
	for k, was := range kept {
		got, err := s.Get(t.Context(), k)
		require.NoError(t, err)
		require.Equal(t, was.Revision, got.Revision, "a refused write leaves %q as it was", k)
		require.Equal(t, *was.Value, *got.Value)
	}
}

// batchBadInputWritesNothing: a batch with bad input anywhere is refused
// whole with ErrInvalid, and nothing is written.
func (suite) batchBadInputWritesNothing(t *testing.T, s store.Store[*Value]) {
	ctx := t.Context()
	a := mustCreate(t, s, "a", val(1))
	rev := mustRevision(t, s)
	w := mustWatch(t, s, "", rev)
	good := store.Write[*Value]{Key: "new", Value: val(2)}
	for name, bad := range map[string]store.Write[*Value]{
		"a key twice":             {Key: "new", Value: val(3)},
		"a guard on a batch key":  {Key: "a", Value: val(3), Revision: a.Revision, Guards: []store.Guard{{Key: "new"}}},
		"an empty key":            {Key: "", Value: val(3)},
		"a nil value":             {Key: "b", Value: nil},
		"a delete at revision 0":  {Key: "a", Delete: true},
		"a negative revision":     {Key: "a", Value: val(3), Revision: -1},
		"a guard with a bad key":  {Key: "b", Value: val(3), Guards: []store.Guard{{Key: "x\x00"}}},
		"a key that is not UTF-8": {Key: "\xff", Value: val(3)},
	} {
		res, err := store.WriteBatch(ctx, s, []store.Write[*Value]{good, bad})
		requireIs(t, err, store.ErrInvalid, name)
		require.Nil(t, res, name)
	}
	var nilCtx context.Context // nil: the bad input under test
	_, err := store.WriteBatch(nilCtx, s, []store.Write[*Value]{good})
	requireIs(t, err, store.ErrInvalid, "a nil context")
	res, err := store.WriteBatch(ctx, s, nil)
	require.NoError(t, err, "an empty batch")
	require.Empty(t, res)
	requireQuiet(t, s, w, rev, "bad batches")
}

// batchCommittedTogether: a store that implements store.BatchWriter
// commits the writes of a batch with no other write between them, even
// while other writers write: their revisions are one, or consecutive.
func (suite) batchCommittedTogether(t *testing.T, s store.Store[*Value]) {
	if _, ok := s.(store.BatchWriter[*Value]); !ok {
		t.Fatalf("%T does not implement store.BatchWriter", s)
	}
	ctx := t.Context()
	const n, rounds = 20, 5
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { // another writer, all along
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := s.Create(ctx, fmt.Sprintf("other/%d", i), val(i)); err != nil {
				t.Errorf("Create: %v", err)
				return
			}
		}
	})
	defer func() { close(stop); wg.Wait() }()
	for round := range rounds {
		writes := make([]store.Write[*Value], n)
		for i := range writes {
			writes[i] = store.Write[*Value]{Key: fmt.Sprintf("batch/%d/%d", round, i), Value: val(i)}
		}
		res, err := store.WriteBatch(ctx, s, writes)
		require.NoError(t, err)
		first, lastRev := res[0].Object.Revision, res[n-1].Object.Revision
		for i, r := range res {
			require.NoError(t, r.Err)
			require.Contains(t, []int64{first, first + int64(i)}, r.Object.Revision,
				"write %d of a batch shares the first write's revision or takes the next ones", i)
		}
		objs, _, err := s.List(ctx, "other/")
		require.NoError(t, err)
		for _, o := range objs {
			if o.Revision > first && o.Revision < lastRev {
				t.Fatalf("another writer's %q at revision %d within the batch's %d..%d", o.Key, o.Revision, first, lastRev)
			}
		}
	}
}

// batchOfManyWrites: a batch larger than a backend commits at once (etcd
// splits beyond 128 writes a Txn) still reports every write on its own:
// every write lands but the one refused, each readable as written.
func (suite) batchOfManyWrites(t *testing.T, s store.Store[*Value]) {
	const n, refused = 300, 150
	mustCreate(t, s, fmt.Sprintf("many/%03d", refused), val(0))
	writes := make([]store.Write[*Value], n)
	for i := range writes {
		writes[i] = store.Write[*Value]{Key: fmt.Sprintf("many/%03d", i), Value: val(i)}
	}
	res, err := store.WriteBatch(t.Context(), s, writes)
	require.NoError(t, err)
	require.Len(t, res, n)
	for i, r := range res {
		if i == refused {
			requireIs(t, r.Err, store.ErrExists, "the create of a key that exists")
			continue
		}
		require.NoError(t, r.Err, "write %d", i)
	}
	objs, _, err := s.List(t.Context(), "many/")
	require.NoError(t, err)
	require.Len(t, objs, n)
	for i, o := range objs {
		want := i
		if i == refused {
			want = 0
		}
		require.Equal(t, want, o.Value.N, "%q", o.Key)
	}
}

// batchAgainstAModel: random batches of creates, updates and deletes,
// fresh and stale, with holding and failing guards, each write's outcome
// and the store's state checked against a model written from the
// contract: a write lands exactly when a single write would, and a
// refusal is the single write's error.
func (suite) batchAgainstAModel(t *testing.T, s store.Store[*Value]) {
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(41, 41))
	model := map[string]store.Object[*Value]{}
	lease := mustCreate(t, s, "lease", val(0))
	for round := range 30 {
		writes, want := randomBatch(rng, model, lease, round)
		res, err := store.WriteBatch(ctx, s, writes)
		require.NoError(t, err, "round %d", round)
		require.Len(t, res, len(writes))
		for i, r := range res {
			w := writes[i]
			if want[i] != nil {
				requireIs(t, r.Err, want[i], fmt.Sprintf("round %d write %d (%q)", round, i, w.Key))
				continue
			}
			require.NoError(t, r.Err, "round %d write %d (%q)", round, i, w.Key)
			if w.Delete {
				delete(model, w.Key)
			} else {
				model[w.Key] = r.Object
			}
		}
		objs, _, err := s.List(ctx, "m/")
		require.NoError(t, err)
		require.Len(t, objs, len(model), "round %d", round)
		for _, o := range objs {
			require.Equal(t, model[o.Key].Revision, o.Revision, "round %d: %q", round, o.Key)
			require.Equal(t, *model[o.Key].Value, *o.Value, "round %d: %q", round, o.Key)
		}
	}
}

// randomBatch makes a batch over up to 12 keys and the error each write
// should get (nil: it lands).
func randomBatch(rng *rand.Rand, model map[string]store.Object[*Value], lease store.Object[*Value], round int) ([]store.Write[*Value], []error) {
	var writes []store.Write[*Value]
	var want []error
	for _, k := range rng.Perm(12)[:1+rng.IntN(12)] {
		key := fmt.Sprintf("m/%02d", k)
		cur, exists := model[key]
		w := store.Write[*Value]{Key: key, Value: val(100*round + k)}
		var err error
		switch op := rng.IntN(4); {
		case op == 0: // create
			if exists {
				err = store.ErrExists
			}
		case !exists: // update or delete of an absent key
			w.Revision, w.Delete = 1+rng.Int64N(50), op == 3
			err = store.ErrNotFound
		default:
			w.Revision, w.Delete = cur.Revision, op == 3
			if rng.IntN(4) == 0 {
				w.Revision += 1000
				err = store.ErrConflict
			}
		}
		if rng.IntN(5) == 0 {
			w.Guards = []store.Guard{{Key: "lease", Revision: lease.Revision + 7}}
			err = store.ErrGuardFailed // checked before the write's own condition
		} else if rng.IntN(3) == 0 {
			w.Guards = []store.Guard{{Key: "lease", Revision: lease.Revision}}
		}
		writes = append(writes, w)
		want = append(want, err)
	}
	return writes, want
}
