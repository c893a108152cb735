package dependency

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// loop is who checks a Dependency: one goroutine, started by the first Set
// to run while none does, kept by every Set running, stopped by the last
// to stop. A Dependency's mu guards it.
type loop struct {
	runners int                // the Sets running with the dependency
	stop    context.CancelFunc // ends the goroutine (set while runners > 0)
	done    chan struct{}      // closed when the latest goroutine has ended
}

// join counts one more Set running with d, starting its checks if it is
// the only one. The checks run under a context of their own, carrying
// ctx's values but not its end: they outlive the first Set if another
// still runs. A goroutine started while the previous one ends waits for
// it, so that Check is never called from two goroutines at once.
func (d *Dependency) join(ctx context.Context) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.loop.runners++; d.loop.runners > 1 {
		return
	}
	lctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	prev, done := d.loop.done, make(chan struct{})
	d.loop.stop, d.loop.done = stop, done
	go func() {
		defer close(done)
		if prev != nil {
			<-prev
		}
		d.follow(lctx)
	}()
}

// leave counts one Set fewer running with d. If it was the last, it ends
// the checks and returns a channel closed once they have ended; else nil.
func (d *Dependency) leave() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.loop.runners--; d.loop.runners > 0 {
		return nil
	}
	d.loop.stop()
	return d.loop.done
}

// follow checks d every Interval until ctx ends. The ticker keeps the
// checks an Interval apart however long each takes (at most an Interval:
// its timeout). A check cut short by the end of ctx counts for nothing.
func (d *Dependency) follow(ctx context.Context) {
	sp := d.spec // set before any Set holding d runs, and never again
	tick := time.NewTicker(sp.interval)
	defer tick.Stop()
	for ctx.Err() == nil {
		err := sp.run(ctx)
		if ctx.Err() != nil {
			return
		}
		d.record(err, time.Now())
		select {
		case <-tick.C:
		case <-ctx.Done():
		}
	}
}

// run runs the check under a timeout of its Interval, turning a panic into
// an error.
func (sp *spec) run(ctx context.Context) (err error) {
	cctx, cancel := context.WithTimeout(ctx, sp.interval)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("check panicked: %v", p)
		}
	}()
	err = sp.check(cctx)
	if err != nil && errors.Is(cctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("check timed out after %v: %w", sp.interval, err)
	}
	return err
}

// record applies the result of a check that ended at now (err nil: it
// succeeded).
func (d *Dependency) record(err error, now time.Time) {
	d.mu.Lock()
	d.state.Checked = now
	var flipped bool
	if err != nil {
		flipped = d.failLocked(err.Error(), now, d.spec.threshold)
	} else {
		d.state.Failures = 0
		if flipped = d.state.Down; flipped {
			d.setDownLocked(false, now)
		}
	}
	sets := d.sets
	d.mu.Unlock()
	if flipped {
		tell(sets)
	}
}

// blame counts a failure with the error text msg that takes d down at
// once, whatever its threshold.
func (d *Dependency) blame(msg string) {
	d.mu.Lock()
	flipped := d.failLocked(msg, time.Now(), 1)
	sets := d.sets
	d.mu.Unlock()
	if flipped {
		tell(sets)
	}
}

// failLocked counts a failure at now, with its error text msg: the
// threshold-th in a row takes d down. It reports whether d went down.
// d.mu is held.
func (d *Dependency) failLocked(msg string, now time.Time, threshold int) bool {
	st := &d.state
	st.Failures++
	st.LastError = msg
	if st.Down || st.Failures < threshold {
		return false
	}
	d.setDownLocked(true, now)
	return true
}

// setDownLocked takes d down, or up, at now. d.mu is held.
func (d *Dependency) setDownLocked(down bool, now time.Time) {
	d.state.Down, d.state.Since = down, now
	d.down.Store(down)
}

// snapshot returns d's state.
func (d *Dependency) snapshot() State {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.state
}

// tell tells every Set of sets that one of its dependencies went down or
// came back up. The sets are only ever appended to, so the slice taken
// under the dependency's lock may be read after it.
func tell(sets []*Set) {
	for _, s := range sets {
		s.changedDown()
	}
}
