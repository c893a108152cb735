package prune_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/kit/prune"
	"github.com/converge-go/converge/store"
)

// databases stands for an external system: databases by name, each with
// a comment holding its maker's mark.
type databases struct {
	mu       sync.Mutex
	comments map[string]string
}

func (d *databases) create(name, comment string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.comments[name]; !ok {
		d.comments[name] = comment
	}
}

func (d *databases) list(context.Context) ([]prune.WorldObject, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []prune.WorldObject
	for name, comment := range d.comments {
		mark, _ := prune.ParseMark(comment) // no mark: never pruned
		out = append(out, prune.WorldObject{Key: "dbs/" + name, Name: name, Mark: mark})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (d *databases) drop(_ context.Context, obj prune.WorldObject) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.comments, obj.Name)
	return nil
}

func (d *databases) names() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for name := range d.comments {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// pruneNow asks for a pass once the Run started by "go pruner.Run" has
// begun: before that, Prune answers ErrNotRunning at once.
func pruneNow(ctx context.Context, pruner *prune.Pruner[*db]) error {
	for {
		_, err := pruner.Prune(ctx)
		if !errors.Is(err, prune.ErrNotRunning) || ctx.Err() != nil {
			return err
		}
		runtime.Gosched()
	}
}

// An operator marks each database it creates with the pruner's mark; the
// pruner drops its own databases that no store object wants, and never one
// a person made.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s := store.NewMemory[*db]()
	world := &databases{comments: map[string]string{"reports": "made by hand"}}

	var pruner *prune.Pruner[*db]
	rec := reconcile.ReconcilerFunc[*db](func(ctx context.Context, req reconcile.Request[*db]) (reconcile.Result, error) {
		if req.Deleted {
			return reconcile.Result{}, nil // missed while the operator was down: the pruner's job
		}
		mark, err := pruner.Mark(ctx)
		if err != nil {
			return reconcile.Result{}, err
		}
		world.create(req.Key[len("dbs/"):], mark.String()) // CREATE DATABASE; COMMENT ON DATABASE
		return reconcile.Result{}, nil
	})
	c, _ := reconcile.New(s, rec, reconcile.Options[*db]{Name: "pgop", Prefix: "dbs/"})
	pruner, _ = prune.New(c, s, prune.Options{Name: "pgop", Prefix: "dbs/", World: world.list, Delete: world.drop})

	go c.Run(ctx)
	go pruner.Run(ctx)
	app, _ := s.Create(ctx, "dbs/app", &db{})
	old, _ := s.Create(ctx, "dbs/old", &db{})
	_ = c.WaitForRevision(ctx, old.Revision)
	fmt.Println("world:", world.names())

	_, _ = s.Delete(ctx, "dbs/old", old.Revision)
	err := pruneNow(ctx, pruner) // or wait for the next interval
	fmt.Println("pruned:", err)
	fmt.Println("world:", world.names())

	_, _ = s.Delete(ctx, "dbs/app", app.Revision)
	err = pruneNow(ctx, pruner)
	fmt.Println("empty store refused:", errors.Is(err, prune.ErrEmpty))
	fmt.Println("world:", world.names())
	// Output:
	// world: [app old reports]
	// pruned: <nil>
	// world: [app reports]
	// empty store refused: true
	// world: [app reports]
}
