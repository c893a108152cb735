package prune

import (
	"context"
	"sync"
	"time"
)

// loop is a Run in progress: Prune hands it requests for a pass.
type loop struct {
	requests chan chan<- Pass
	done     chan struct{} // closed when the Run returns
}

// Run runs passes until ctx ends, then returns nil: the first once the
// controller's initial list is in its cache (WaitForSync), then one every
// Options.Interval after the end of the previous pass, and one for each
// Prune call. A pass refused or failed is recorded (Last) and logged, and
// the next one comes at the next interval. Every pass runs with ctx, so a
// leader-only pruner stops acting the moment its term is in doubt. Run
// returns ErrAlreadyRunning while another Run of p is in progress; it may
// be called again once that one has returned.
func (p *Pruner[T]) Run(ctx context.Context) error {
	l, err := p.begin()
	if err != nil {
		return err
	}
	defer p.end(l)
	synced := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		if p.c.WaitForSync(ctx) == nil {
			close(synced)
		}
	})
	var next <-chan time.Time // nil until the first sync
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-synced:
			synced = nil
			p.record(p.pass(ctx))
			next = time.After(p.opts.Interval)
		case <-next:
			p.record(p.pass(ctx))
			next = time.After(p.opts.Interval)
		case reply := <-l.requests:
			pass := p.pass(ctx)
			p.record(pass)
			reply <- pass
		}
	}
}

// begin makes the Run in progress, or returns ErrAlreadyRunning.
func (p *Pruner[T]) begin() (*loop, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.loop != nil {
		return nil, ErrAlreadyRunning
	}
	p.loop = &loop{requests: make(chan chan<- Pass), done: make(chan struct{})}
	return p.loop, nil
}

// end ends the Run in progress: Prune calls waiting for it return
// ErrNotRunning.
func (p *Pruner[T]) end(l *loop) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.loop = nil
	close(l.done)
}

// Prune asks the running pruner for a pass now and returns it, with its
// Err, once it is done. The pass runs in Run, with Run's context (under
// leader election, only in the leader), after the pass in progress if
// any; before the first sync it is refused (reconcile.ErrNotSynced). Prune
// returns ErrNotRunning when no Run is in progress or Run returns first,
// and ctx's error if ctx ends first (the pass may still run).
func (p *Pruner[T]) Prune(ctx context.Context) (Pass, error) {
	p.mu.Lock()
	l := p.loop
	p.mu.Unlock()
	if l == nil {
		return Pass{}, ErrNotRunning
	}
	reply := make(chan Pass, 1)
	select {
	case l.requests <- reply:
	case <-l.done:
		return Pass{}, ErrNotRunning
	case <-ctx.Done():
		return Pass{}, ctx.Err()
	}
	select {
	case pass := <-reply:
		return pass, pass.Err
	case <-ctx.Done():
		return Pass{}, ctx.Err()
	}
}
