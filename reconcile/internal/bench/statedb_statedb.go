package bench

import (
	"context"
	"fmt"
	"iter"
	"log/slog"
	"strconv"
	"sync/atomic"

	"github.com/cilium/hive"
	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"
	"github.com/cilium/statedb"
	"github.com/cilium/statedb/index"
	"github.com/cilium/statedb/reconciler"
	"golang.org/x/time/rate"
)

// RunStatedb runs the statedb workload on cilium/statedb's reconciler, set
// up as its own benchmark sets it up (reconciler/benchmark/main.go, v0.9.5).
func RunStatedb(o SideOptions) (SideResult, error) {
	return measure("statedb", o, runStatedb)
}

// sdObject is the benchmark's object: an id and the reconciler's status.
type sdObject struct {
	id     uint64
	status reconciler.Status
}

// TableHeader and TableRow make the object a statedb.TableWritable.
func (t *sdObject) TableHeader() []string { return []string{"id", "status"} }

func (t *sdObject) TableRow() []string {
	return []string{strconv.FormatUint(t.id, 10), t.status.String()}
}

func (t *sdObject) getStatus() reconciler.Status { return t.status }

func (t *sdObject) setStatus(s reconciler.Status) *sdObject {
	t.status = s
	return t
}

func (t *sdObject) clone() *sdObject {
	c := *t
	return &c
}

// sdOps is the mock operation: it counts updates.
type sdOps struct{ updates atomic.Int64 }

func (o *sdOps) Update(context.Context, statedb.ReadTxn, statedb.Revision, *sdObject) error {
	o.updates.Add(1)
	return nil
}

func (o *sdOps) Delete(context.Context, statedb.ReadTxn, statedb.Revision, *sdObject) error {
	return nil
}

func (o *sdOps) Prune(context.Context, statedb.ReadTxn, iter.Seq2[*sdObject, statedb.Revision]) error {
	return nil
}

var sdIDIndex = statedb.Index[*sdObject, uint64]{
	Name:       "id",
	FromObject: func(t *sdObject) index.KeySet { return index.NewKeySet(index.Uint64(t.id)) },
	FromKey:    index.Uint64,
	Unique:     true,
}

func runStatedb(o SideOptions, converging, settled func()) (int64, error) {
	t, err := startStatedb(o.Round, rate.NewLimiter(1000.0, 10))
	if err != nil {
		return 0, err
	}
	converging()
	if err = t.insertPending(context.Background(), o.Objects, o.Insert); err == nil {
		settled()
	}
	return 0, t.stop(err, int64(o.Objects))
}

// sdTable is statedb's reconciler running in a hive over one table of
// sdObject, set up as statedb's benchmark sets it up but for the round's
// limits.
type sdTable struct {
	h     *hive.Hive
	log   *slog.Logger
	db    *statedb.DB
	table statedb.RWTable[*sdObject]
	ops   *sdOps
	rec   reconciler.Reconciler[*sdObject]
}

// startStatedb starts the hive with the reconciler registered with
// reconciler.WithRoundLimits(round, limiter).
func startStatedb(round int, limiter *rate.Limiter) (*sdTable, error) {
	t := &sdTable{ops: &sdOps{}, log: slog.New(slog.DiscardHandler)}
	t.h = hive.New(
		cell.SimpleHealthCell,
		statedb.Cell,
		job.Cell,
		cell.Module("test", "Test",
			cell.Invoke(func(d *statedb.DB) (err error) {
				t.db = d
				t.table, err = statedb.NewTable(d, "test-objects", sdIDIndex)
				return err
			}),
			cell.Provide(
				func() reconciler.Operations[*sdObject] { return t.ops },
				job.Registry.NewGroup,
			),
			cell.Invoke(func(p reconciler.Params) (err error) {
				t.rec, err = reconciler.Register(p, t.table,
					(*sdObject).clone, (*sdObject).setStatus, (*sdObject).getStatus,
					t.ops, nil,
					reconciler.WithRoundLimits(round, limiter))
				return err
			}),
		),
	)
	if err := t.h.Start(t.log, context.Background()); err != nil {
		return nil, err
	}
	return t, nil
}

// insertPending inserts objects 0 to n-1 (n > 0) as pending, batch to a
// write transaction, and returns once every one is done.
func (t *sdTable) insertPending(ctx context.Context, n, batch int) error {
	id := uint64(0)
	for id < uint64(n) {
		wtxn := t.db.WriteTxn(t.table)
		for end := min(id+uint64(batch), uint64(n)); id < end; id++ {
			if _, _, err := t.table.Insert(wtxn, &sdObject{id: id, status: reconciler.StatusPending()}); err != nil {
				wtxn.Abort()
				return err
			}
		}
		wtxn.Commit()
	}
	// Every operation succeeds, so the last object done means all are.
	return t.waitDone(ctx, id-1)
}

// settle returns once the reconciler has processed every change of the
// table so far, its own status writes included.
func (t *sdTable) settle(ctx context.Context) error {
	_, _, err := t.rec.WaitUntilReconciled(ctx, t.table.Revision(t.db.ReadTxn()))
	return err
}

// markPending makes object id pending again: the writer's read and
// insert in one write transaction.
func (t *sdTable) markPending(id uint64) error {
	wtxn := t.db.WriteTxn(t.table)
	obj, _, ok := t.table.Get(wtxn, sdIDIndex.Query(id))
	if !ok {
		wtxn.Abort()
		return fmt.Errorf("statedb: object %d not found", id)
	}
	if _, _, err := t.table.Insert(wtxn, obj.clone().setStatus(reconciler.StatusPending())); err != nil {
		wtxn.Abort()
		return err
	}
	wtxn.Commit()
	return nil
}

// waitDone returns once object id's status is done, woken by the
// table's watch channel.
func (t *sdTable) waitDone(ctx context.Context, id uint64) error {
	for {
		obj, _, watch, ok := t.table.GetWatch(t.db.ReadTxn(), sdIDIndex.Query(id))
		if ok && obj.status.Kind == reconciler.StatusKindDone {
			return nil
		}
		select {
		case <-watch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// stop checks that the mock operation ran updates times and that every
// object is done, unless err is already set, then stops the hive.
func (t *sdTable) stop(err error, updates int64) error {
	if n := t.ops.updates.Load(); err == nil && n != updates {
		err = fmt.Errorf("statedb: %d updates, want %d", n, updates)
	}
	for obj := range t.table.All(t.db.ReadTxn()) {
		if err == nil && obj.status.Kind != reconciler.StatusKindDone {
			err = fmt.Errorf("statedb: object %d has status %s", obj.id, obj.status)
		}
	}
	if stopErr := t.h.Stop(t.log, context.Background()); err == nil {
		err = stopErr
	}
	return err
}
