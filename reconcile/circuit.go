package reconcile

import (
	"context"
	"log/slog"
	"slices"
	"sync"

	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/reconcile/dependency"
)

// circuit holds a controller's hand-outs while one of its dependencies
// (Options.Dependencies) is down: no reconcile starts meanwhile, so none
// hammers the dead system, and the reconciles in flight finish. The
// dependencies' state is shared by every controller given them: the
// circuit opens at the first hand-out, or reconcile end, that finds one
// down, or when followDependencies is told, whichever comes first.
//
// Invariant: while the circuit is open, every key woken is in the queue
// and nowhere else. Workers wait for the circuit to close (wait), a Get in
// flight is cancelled as it opens (the context wait returned ends), and a
// key handed out in the instant it opened is given back unreconciled
// (giveBack). A reconcile that fails while it is open queues its key at
// once, counting no retry (settle): the key waits for the dependency, not
// for a backoff. So the queue alone holds the keys the circuit holds
// (waiting, or delayed until a retry scheduled before it opened), and the
// ledger keeps no record of them. The circuit closes only while every
// dependency is up, and only after every key whose latest reconcile
// failed has had its backoff forgotten and been queued at once
// (Controller.retryHeld), so that no key waits out a backoff that grew
// during the outage.
type circuit struct {
	deps *dependency.Set
	log  *slog.Logger

	mu     sync.Mutex
	open   bool
	up     context.Context // ends when the circuit opens
	endUp  context.CancelFunc
	closed chan struct{} // closed when the circuit closes
}

func newCircuit(deps *dependency.Set, log *slog.Logger) *circuit {
	c := &circuit{deps: deps, log: log, closed: make(chan struct{})}
	close(c.closed)
	c.up, c.endUp = context.WithCancel(context.Background())
	return c
}

// holds reports whether the circuit is open, opening it first if a
// dependency is down (another controller's reconcile may have found it
// down an instant ago); false for a nil circuit (a controller without
// dependencies).
func (c *circuit) holds() bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.open && c.deps.Down() {
		c.tripLocked()
	}
	return c.open
}

// wait blocks while the circuit is open, then returns a context that ends
// when it opens again; it returns ctx's error if ctx ends first.
func (c *circuit) wait(ctx context.Context) (context.Context, error) {
	for {
		c.mu.Lock()
		open, up, closed := c.open, c.up, c.closed
		c.mu.Unlock()
		if !open {
			return up, nil
		}
		select {
		case <-closed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// trip opens the circuit.
func (c *circuit) trip() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tripLocked()
}

// tripLocked opens the circuit, if it is closed, and says so in the log.
// c.mu is held.
func (c *circuit) tripLocked() {
	if c.open {
		return
	}
	c.open = true
	c.endUp()
	c.closed = make(chan struct{})
	c.log.Warn("dependency down; holding every key until it is up", "error", c.deps.Err())
}

// blame opens the circuit for a reconcile error marked with
// dependency.Down, if it names one of the controller's dependencies, and
// reports whether it does. Under c.mu, so that reset cannot close the
// circuit between the dependency going down and the circuit opening.
func (c *circuit) blame(err error) bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.deps.Blame(err) {
		return false
	}
	c.tripLocked()
	return true
}

// reset closes the circuit if every dependency is up, and reports whether
// it did.
func (c *circuit) reset() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if down, _ := c.deps.Watch(); !c.open || down {
		return false
	}
	c.open = false
	c.up, c.endUp = context.WithCancel(context.Background())
	close(c.closed)
	return true
}

// followDependencies keeps the circuit in step with the dependencies until
// ctx ends: open while one is down; once all are up again, the held keys
// are retried and the circuit closes.
func (c *Controller[T]) followDependencies(ctx context.Context) {
	for {
		down, changed := c.deps.Watch()
		switch {
		case down:
			c.circ.trip()
		case c.circ.holds():
			n := c.retryHeld()
			if c.circ.reset() {
				c.opts.Logger.Info("dependencies up; reconciling again", "retried", n)
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
	}
}

// DependsOn returns the controller's dependencies (Options.Dependencies),
// for whoever runs it to tell whether two of its parts share one, or make
// two of one name (manager.Manager refuses those).
func (c *Controller[T]) DependsOn() []*dependency.Dependency {
	return slices.Clone(c.opts.Dependencies)
}

// retryHeld forgets the backoff of every key whose latest reconcile failed
// and queues it at once: it failed, or waited for its retry, while a
// dependency was down (or just before it was found down). It returns how
// many keys it queued.
func (c *Controller[T]) retryHeld() int {
	c.mu.Lock()
	keys := c.led.unsettled()
	c.mu.Unlock()
	q := c.q()
	for _, key := range keys {
		q.Forget(key)
		q.AddWith(key, queue.AddOptions{Tags: trigRecovered})
	}
	return len(keys)
}

// handOuts returns the context a worker's Gets take until the circuit
// opens, waiting while it is open, and the function that releases it; ctx
// itself without dependencies. It returns ctx's error once ctx ends.
func (c *Controller[T]) handOuts(ctx context.Context) (context.Context, context.CancelFunc, error) {
	if c.circ == nil {
		return ctx, func() {}, ctx.Err()
	}
	up, err := c.circ.wait(ctx)
	if err != nil {
		return nil, nil, err
	}
	get, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(up, cancel)
	return get, func() { stop(); cancel() }, nil
}

// giveBack returns key, handed out in the instant the circuit opened, to
// the queue unreconciled, with what woke it: it is queued again at Done.
func giveBack(q *queue.Queue[string], key string, why trigger) {
	q.AddWith(key, queue.AddOptions{Tags: why})
	q.Done(key)
}
