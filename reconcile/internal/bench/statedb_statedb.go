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
	ops := &sdOps{}
	var (
		db    *statedb.DB
		table statedb.RWTable[*sdObject]
	)
	h := hive.New(
		cell.SimpleHealthCell,
		statedb.Cell,
		job.Cell,
		cell.Module("test", "Test",
			cell.Invoke(func(d *statedb.DB) (err error) {
				db = d
				table, err = statedb.NewTable(db, "test-objects", sdIDIndex)
				return err
			}),
			cell.Provide(
				func() reconciler.Operations[*sdObject] { return ops },
				job.Registry.NewGroup,
			),
			cell.Invoke(func(p reconciler.Params) error {
				_, err := reconciler.Register(p, table,
					(*sdObject).clone, (*sdObject).setStatus, (*sdObject).getStatus,
					ops, nil,
					reconciler.WithRoundLimits(o.Round, rate.NewLimiter(1000.0, 10)))
				return err
			}),
		),
	)
	log := slog.New(slog.DiscardHandler)
	if err := h.Start(log, context.Background()); err != nil {
		return 0, err
	}
	converging()
	id := uint64(0)
	for range o.Objects / o.Insert {
		wtxn := db.WriteTxn(table)
		for range o.Insert {
			if _, _, err := table.Insert(wtxn, &sdObject{id: id, status: reconciler.StatusPending()}); err != nil {
				wtxn.Abort()
				return 0, err
			}
			id++
		}
		wtxn.Commit()
	}
	// Every operation succeeds, so the last object done means all are.
	for {
		obj, _, watch, ok := table.GetWatch(db.ReadTxn(), sdIDIndex.Query(id-1))
		if ok && obj.status.Kind == reconciler.StatusKindDone {
			break
		}
		<-watch
	}
	settled()
	var err error
	if n := ops.updates.Load(); n != int64(id) {
		err = fmt.Errorf("statedb: %d updates for %d objects", n, id)
	}
	for obj := range table.All(db.ReadTxn()) {
		if err == nil && obj.status.Kind != reconciler.StatusKindDone {
			err = fmt.Errorf("statedb: object %d has status %s", obj.id, obj.status)
		}
	}
	if stopErr := h.Stop(log, context.Background()); err == nil {
		err = stopErr
	}
	return 0, err
}
