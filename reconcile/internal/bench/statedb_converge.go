package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/store"
)

// RunConvergeStatedb runs the statedb workload on converge: the objects
// in a store.Memory, reconcile.New with default options (one worker), the
// mock operation, then the status written through Request.Store.
func RunConvergeStatedb(name string, o SideOptions) (SideResult, error) {
	return measure(name, o, runConvergeStatedb)
}

// Item is the statedb workload's object on converge.
type Item struct {
	ID     uint64
	Status ItemStatus
}

// ItemStatus is what the reconciler records, as statedb's
// reconciler.Status does: a kind and when it was set.
type ItemStatus struct {
	Kind      string
	UpdatedAt time.Time
}

// Status kinds of ItemStatus.
const (
	ItemPending = "Pending"
	ItemDone    = "Done"
)

// listCounter is the memory store with its lists counted: every method
// and optional interface of *store.Memory passes through.
type listCounter struct {
	*store.Memory[*Item]
	lists   atomic.Int64
	catchUp bool
}

// Watch is the memory store's, or with catchUp store.WatchCatchingUp's
// over it: a watch that falls behind catches up by difference.
func (c *listCounter) Watch(ctx context.Context, prefix string, after int64) (store.Watcher[*Item], error) {
	if c.catchUp {
		return store.WatchCatchingUp(ctx, c.Memory, prefix, after)
	}
	return c.Memory.Watch(ctx, prefix, after)
}

func (c *listCounter) List(ctx context.Context, prefix string) ([]store.Object[*Item], int64, error) {
	c.lists.Add(1)
	return c.Memory.List(ctx, prefix)
}

// itemReconciler is the workload's reconciler: the mock operation, then
// the status written back.
type itemReconciler struct {
	updates atomic.Int64
	done    atomic.Int64
	all     chan struct{} // closed when done reaches want
	want    int64
}

func (r *itemReconciler) Reconcile(ctx context.Context, req reconcile.Request[*Item]) (reconcile.Result, error) {
	w, ok := r.write(req)
	if !ok {
		return reconcile.Result{}, nil
	}
	if _, err := req.Store.Update(ctx, w.Key, w.Value, w.Revision); err != nil {
		return reconcile.Result{}, err
	}
	r.wrote(1)
	return reconcile.Result{}, nil
}

// write runs the mock operation for req and returns the status write it
// calls for, or false if the object needs none.
func (r *itemReconciler) write(req reconcile.Request[*Item]) (store.Write[*Item], bool) {
	if req.Deleted || req.Object.Value.Status.Kind == ItemDone {
		return store.Write[*Item]{}, false
	}
	r.updates.Add(1)
	v := &Item{ID: req.Object.Value.ID, Status: ItemStatus{Kind: ItemDone, UpdatedAt: time.Now()}}
	return store.Write[*Item]{Key: req.Key, Value: v, Revision: req.Object.Revision}, true
}

// wrote counts n status writes done.
func (r *itemReconciler) wrote(n int) {
	if r.done.Add(int64(n)) == r.want {
		close(r.all)
	}
}

func itemKey(id uint64) string { return "obj/" + strconv.FormatUint(id, 10) }

func runConvergeStatedb(o SideOptions, converging, settled func()) (int64, error) {
	var mopts []store.MemoryOption
	if o.History > 0 {
		mopts = append(mopts, store.WithHistory(o.History))
	}
	s := &listCounter{Memory: store.NewMemory[*Item](mopts...), catchUp: o.CatchUp}
	defer s.Close()
	rec := &itemReconciler{all: make(chan struct{}), want: int64(o.Objects)}
	opts := reconcile.Options[*Item]{Name: "statedb-workload"}
	var r reconcile.Reconciler[*Item] = rec
	if o.Batch {
		opts.BatchSize = o.Round
		r = &itemBatchReconciler{itemReconciler: rec, writes: o.BatchWrites}
	}
	c, err := startItems(s, r, opts)
	if err != nil {
		return 0, err
	}
	converging()
	if err := insertItems(context.Background(), s, o); err != nil {
		return 0, errors.Join(err, c.stop())
	}
	select {
	case <-rec.all:
	case err := <-c.runErr:
		c.cancel()
		return 0, fmt.Errorf("controller stopped before converging: %v", err)
	}
	settled()
	if n := rec.updates.Load(); n < int64(o.Objects) {
		err = fmt.Errorf("converge: %d updates for %d objects", n, o.Objects)
	}
	if e := c.stop(); err == nil {
		err = e
	}
	return s.lists.Load() - 1, err
}

// itemController is a controller of Items running until stop.
type itemController struct {
	*reconcile.Controller[*Item]
	cancel context.CancelFunc
	runErr chan error // Run's error, once it returns
}

// startItems starts a controller of s with r and opts and returns once its
// cache has synced.
func startItems(s store.Store[*Item], r reconcile.Reconciler[*Item], opts reconcile.Options[*Item]) (*itemController, error) {
	c, err := reconcile.New(s, r, opts)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	ic := &itemController{Controller: c, cancel: cancel, runErr: make(chan error, 1)}
	go func() { ic.runErr <- c.Run(ctx) }()
	if err := c.WaitForSync(ctx); err != nil {
		return nil, errors.Join(err, ic.stop())
	}
	return ic, nil
}

// stop stops the controller and returns Run's error.
func (c *itemController) stop() error {
	c.cancel()
	return <-c.runErr
}

// insertItems creates the workload's objects as pending, Insert at a
// time: one store.WriteBatch each with BatchWrites, else one Create each.
func insertItems(ctx context.Context, s store.Store[*Item], o SideOptions) error {
	writes := make([]store.Write[*Item], 0, o.Insert)
	for id := range uint64(o.Objects) {
		v := &Item{ID: id, Status: ItemStatus{Kind: ItemPending}}
		if !o.BatchWrites {
			if _, err := s.Create(ctx, itemKey(id), v); err != nil {
				return err
			}
			continue
		}
		writes = append(writes, store.Write[*Item]{Key: itemKey(id), Value: v})
		if len(writes) == o.Insert || id == uint64(o.Objects)-1 {
			if err := writeAll(ctx, s, writes); err != nil {
				return err
			}
			writes = writes[:0]
		}
	}
	return nil
}

// writeAll writes a batch and fails on its first refused write.
func writeAll(ctx context.Context, s store.Store[*Item], writes []store.Write[*Item]) error {
	res, err := store.WriteBatch(ctx, s, writes)
	if err != nil {
		return err
	}
	for _, r := range res {
		if r.Err != nil {
			return r.Err
		}
	}
	return nil
}

// itemBatchReconciler reconciles a batch of keys, its status writes one
// Update each or, with writes, one store.WriteBatch through the batch's
// first Request.Store (every request's store is the controller's).
type itemBatchReconciler struct {
	*itemReconciler
	writes bool
}

func (r *itemBatchReconciler) ReconcileBatch(ctx context.Context, reqs []reconcile.Request[*Item]) []reconcile.BatchResult {
	out := make([]reconcile.BatchResult, len(reqs))
	if !r.writes {
		for i, req := range reqs {
			out[i].Result, out[i].Err = r.Reconcile(ctx, req)
		}
		return out
	}
	writes := make([]store.Write[*Item], 0, len(reqs))
	at := make([]int, 0, len(reqs))
	for i, req := range reqs {
		if w, ok := r.write(req); ok {
			writes = append(writes, w)
			at = append(at, i)
		}
	}
	if len(writes) == 0 {
		return out
	}
	res, err := store.WriteBatch(ctx, reqs[0].Store, writes)
	for j, i := range at {
		switch {
		case err != nil:
			out[i].Err = err
		case res[j].Err != nil:
			out[i].Err = res[j].Err
		default:
			r.wrote(1)
		}
	}
	return out
}
