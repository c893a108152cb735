package intent_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/kit/intent"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
)

type (
	backupSpec   struct{ Database string }
	backupStatus struct {
		Dump intent.Record[string] `json:"dump"` // the result: the dump's size
	}
	backup = resource.Resource[backupSpec, backupStatus]
)

// dumps stands for the world: dumps taken, by attempt ID. It keeps each
// result, as a result file on disk would.
type dumps struct {
	mu    sync.Mutex
	taken map[string]string
}

func (d *dumps) find(_ context.Context, id string) (intent.Found[string], error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if size, ok := d.taken[id]; ok {
		return intent.Found[string]{State: intent.Finished, Result: size}, nil
	}
	return intent.Found[string]{State: intent.Absent}, nil
}

func (d *dumps) take(_ context.Context, id string) (intent.Found[string], error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.taken[id]; !ok { // a second take of one ID takes nothing
		d.taken[id] = "42 MB"
	}
	return intent.Found[string]{State: intent.Finished, Result: d.taken[id]}, nil
}

// A reconciler takes one dump per generation of each backup's spec: Step
// records the intent, takes the dump under the intent's ID, and records
// its size.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s := store.NewMemory[*backup]()
	world := &dumps{taken: map[string]string{}}
	once := intent.ForResource[backupSpec](func(st *backupStatus) *intent.Record[string] { return &st.Dump })
	once.Find, once.Act = world.find, world.take

	rec := reconcile.ReconcilerFunc[*backup](func(ctx context.Context, req reconcile.Request[*backup]) (reconcile.Result, error) {
		if req.Deleted {
			return reconcile.Result{}, nil
		}
		out, err := once.Step(ctx, req.Store, req.Object)
		switch {
		case err != nil:
			return reconcile.Result{}, err
		case out.Running:
			return reconcile.Result{RequeueAfter: time.Second}, nil // look again
		}
		return reconcile.Result{Requeue: out.Next}, nil
	})
	c, _ := reconcile.New(s, rec, reconcile.Options[*backup]{Name: "backups"})
	go c.Run(ctx)

	obj, _ := resource.PutSpec(ctx, s, "backups/app", backupSpec{Database: "app"})
	_ = c.WaitForRevision(ctx, obj.Revision)
	_ = c.Enqueue("backups/app") // reconciled again: nothing more is taken
	obj, _ = resource.PutSpec(ctx, s, "backups/app", backupSpec{Database: "app2"})
	_ = c.WaitForRevision(ctx, obj.Revision)

	got, _ := s.Get(ctx, "backups/app")
	fmt.Println("dumps taken:", len(world.taken))
	fmt.Println("last:", got.Value.Status.Dump.ID, got.Value.Status.Dump.Result)
	// Output:
	// dumps taken: 2
	// last: backups_2Fapp.c1.g2.a1 42 MB
}

// After a crash between the act and the record of its result, the next
// Step finds the intent pending, asks the world, and judges the attempt
// by the result the world kept: it does not act again.
func ExampleOnce_Step() {
	ctx := context.Background()
	s := store.NewMemory[*backup]()
	world := &dumps{taken: map[string]string{}}
	once := intent.ForResource[backupSpec](func(st *backupStatus) *intent.Record[string] { return &st.Dump })
	once.Find, once.Act = world.find, world.take
	obj, _ := resource.PutSpec(ctx, s, "backups/app", backupSpec{Database: "app"})

	crashing := once
	crashing.Write = func(ctx context.Context, s store.Store[*backup], obj store.Object[*backup], rec intent.Record[string]) (store.Object[*backup], error) {
		if rec.Done {
			return store.Object[*backup]{}, fmt.Errorf("killed before the result was recorded")
		}
		return once.Write(ctx, s, obj, rec)
	}
	out, err := crashing.Step(ctx, s, obj)
	fmt.Println(out.Decisions, err)

	obj, _ = s.Get(ctx, "backups/app") // the next process reads the store
	fmt.Println("pending:", obj.Value.Status.Dump.Pending())
	out, err = once.Step(ctx, s, obj)
	fmt.Println(out.Decisions, err, out.Record.Result)
	fmt.Println("dumps taken:", len(world.taken))
	// Output:
	// [Begin Act] killed before the result was recorded
	// pending: true
	// [Judge] <nil> 42 MB
	// dumps taken: 1
}

// A dump written through a File is never mistaken for a complete one:
// the path holds it only once Commit returns.
func ExampleCreateFile() {
	dir, _ := os.MkdirTemp("", "dumps")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "app.sql")

	f, _ := intent.CreateFile(path, 0o600)
	defer f.Close() // removes the temporary file if Commit is not reached
	fmt.Fprintln(f, "-- dump of app")
	_, err := os.Stat(path)
	fmt.Println("before Commit, the path exists:", err == nil)
	if err := f.Commit(); err != nil {
		fmt.Println(err)
		return
	}
	b, _ := os.ReadFile(path)
	fmt.Printf("after Commit: %q\n", b)
	// Output:
	// before Commit, the path exists: false
	// after Commit: "-- dump of app\n"
}
