package running_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/lock"
	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/dependency"
	"github.com/converge-go/converge/reconcile/kit/drift"
	"github.com/converge-go/converge/reconcile/kit/owners"
	"github.com/converge-go/converge/reconcile/kit/prune"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/reconcile/kit/schedule"
	"github.com/converge-go/converge/reconcile/manager"
	"github.com/converge-go/converge/reconcile/shard"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/changelog"
	"github.com/converge-go/converge/store/snapshot"
	"github.com/stretchr/testify/require"
)

// runnable is what a case makes: the call that runs it until ctx ends.
type runnable func(ctx context.Context) error

type item = resource.Resource[int, int]

// noController is a pruner's controller that is always in sync.
type noController struct{}

func (noController) WaitForSync(context.Context) error { return nil }
func (noController) Ready() error                      { return nil }
func (noController) Enqueue(string) error              { return nil }

// runnables makes one of every converge runnable that refuses a second
// run while one runs, by the name of the package whose message it carries.
func runnables(t *testing.T) map[string]func(t *testing.T) runnable {
	noop := reconcile.ReconcilerFunc[*item](func(context.Context, reconcile.Request[*item]) (reconcile.Result, error) {
		return reconcile.Result{}, nil
	})
	return map[string]func(t *testing.T) runnable{
		"reconcile": func(t *testing.T) runnable {
			c, err := reconcile.New(store.NewMemory[*item](), noop, reconcile.Options[*item]{Name: "test"})
			require.NoError(t, err)
			return c.Run
		},
		"dependency": func(t *testing.T) runnable {
			return new(dependency.Set).Run
		},
		"prune": func(t *testing.T) runnable {
			p, err := prune.New(noController{}, store.NewMemory[*item](), prune.Options{
				Name:   "test",
				World:  func(context.Context) ([]prune.WorldObject, error) { return nil, nil },
				Delete: func(context.Context, prune.WorldObject) error { return nil },
			})
			require.NoError(t, err)
			return p.Run
		},
		"owners": func(t *testing.T) runnable {
			kind := resource.Kind[int, int]{}
			layer, err := apistore.New[*item](store.NewMemory[*item](), kind)
			require.NoError(t, err)
			c, err := owners.NewCollector[*item](layer, kind, owners.CollectorOptions{})
			require.NoError(t, err)
			return c.Run
		},
		"manager": func(t *testing.T) runnable {
			m, err := manager.New(manager.Options{})
			require.NoError(t, err)
			return m.Run
		},
		"drift": func(t *testing.T) runnable {
			s, err := drift.New(func(context.Context) ([]drift.Observed, error) { return nil, nil }, drift.Options{})
			require.NoError(t, err)
			return func(ctx context.Context) error { return s.Start(ctx, func(string) {}) }
		},
		"schedule": func(t *testing.T) runnable {
			s, err := schedule.NewSource(func(context.Context) ([]schedule.Entry, error) { return nil, nil }, schedule.Options{})
			require.NoError(t, err)
			return func(ctx context.Context) error { return s.Start(ctx, func(string) {}) }
		},
		"shard": func(t *testing.T) runnable {
			r, err := shard.New(store.NewMemory[[]byte](), shard.Options{ID: "a"})
			require.NoError(t, err)
			return r.Run
		},
		"lock": func(t *testing.T) runnable {
			lease, err := lock.NewLease(store.NewMemory[lock.Record](), "leader", lock.LeaseOptions{Holder: "a"})
			require.NoError(t, err)
			e, err := lock.NewElector(lease, lock.ElectorOptions{})
			require.NoError(t, err)
			return func(ctx context.Context) error {
				return e.Run(ctx, func(ctx context.Context) error { <-ctx.Done(); return nil })
			}
		},
		"changelog": func(t *testing.T) runnable {
			s, err := changelog.NewShipper(store.NewMemory[[]byte](), nil, changelog.Options{Dir: t.TempDir()})
			require.NoError(t, err)
			return s.Run
		},
		"snapshot": func(t *testing.T) runnable {
			s, err := snapshot.NewSaver(snapshot.Bytes(store.NewMemory[[]byte]()), snapshot.SaverOptions{Dir: t.TempDir()})
			require.NoError(t, err)
			return s.Run
		},
	}
}

// TestEveryRunnableRunTwiceAtOnceRefusesWithOneError: a Run (or a
// source's Start) of any converge runnable called while another runs
// returns an error matching reconcile.ErrAlreadyRunning, whose message
// begins with the name of the package that refused it, and leaves the
// first run going until its context ends.
func TestEveryRunnableRunTwiceAtOnceRefusesWithOneError(t *testing.T) {
	for pkg, newRun := range runnables(t) {
		t.Run(pkg, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				run := newRun(t)
				ctx, cancel := context.WithCancel(t.Context())
				done := make(chan error, 1)
				go func() { done <- run(ctx) }()
				synctest.Wait()
				// A second run that is not refused returns when its own
				// context ends, an hour later in the bubble's time.
				second, stop := context.WithTimeout(t.Context(), time.Hour)
				err := run(second)
				stop()
				require.ErrorIs(t, err, reconcile.ErrAlreadyRunning)
				require.True(t, strings.HasPrefix(err.Error(), pkg+": already running"), err.Error())
				select {
				case err := <-done:
					t.Fatalf("the first run ended: %v", err)
				default:
				}
				cancel()
				require.NoError(t, <-done)
			})
		})
	}
}
