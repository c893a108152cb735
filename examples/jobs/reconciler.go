package main

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/converge-go/converge/examples/internal/procstat"
	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
)

// Reconciler runs each job to success, at most once, and at most one
// attempt at a time, across restarts of the daemon (see the package
// documentation for the state machine). A reconcile of a job whose attempt
// runs lasts as long as the attempt: the controller's workers are the
// concurrency limit.
//
// Its first step is the finalizer (resource.Finalize with Finalizer): the
// finalizer is on every job before its first attempt is recorded, so that
// deleting a job, in a store with the API-server layer (store/apistore,
// which the daemon's store has), only marks it until the daemon has
// stopped its attempt, if one runs; the daemon then removes the finalizer,
// which removes the job. A job deleted while no daemon runs is thus
// cleaned up by the next one, as is a job whose deletion a daemon saw but
// was killed before it stopped the attempt.
type Reconciler struct {
	launcher *launcher
	// backoff is the controller's rate limiter: the delay after failed
	// attempt n is backoff.Delay(n-1), base·2^(n-1).
	backoff *queue.Exponential[string]
	// cached returns the controller's cached object at key, if any.
	cached func(key string) (store.Object[*Job], bool)
	// poll is how often an attempt this daemon did not start is checked.
	poll time.Duration
}

// Reconcile implements reconcile.Reconciler.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request[*Job]) (reconcile.Result, error) {
	if req.Deleted {
		// Gone without the finalizer's cleanup (a store without the
		// API-server layer, or the finalizer removed by hand): stop its
		// attempt all the same.
		return reconcile.Result{}, r.cleanup(ctx, req)
	}
	if req.Object.Value == nil {
		return reconcile.Result{}, nil
	}
	obj, deleting, err := resource.Finalize(ctx, req, Finalizer, func(ctx context.Context) error {
		return r.cleanup(ctx, req)
	})
	if deleting || err != nil {
		return reconcile.Result{}, err
	}
	obj = withOwnRun(obj)
	job := obj.Value
	st := job.Status
	switch {
	case st.Phase == Starting || st.Phase == Running:
		return r.settle(ctx, req, obj)
	case st.Phase.Final() && st.RunGeneration == job.Generation:
		return reconcile.Result{}, nil
	}
	if err := checkSpec(job.Spec); err != nil {
		return refuse(ctx, req.Store, obj, err)
	}
	if st.Phase == Backoff && st.RunGeneration == job.Generation {
		if wait := time.Until(st.NextAttemptAt); wait > 0 {
			return reconcile.Result{RequeueAfter: wait}, nil
		}
	}
	return r.start(ctx, req, obj)
}

// start records the intent of the next attempt, then launches it. If the
// intent cannot be recorded, nothing is started.
func (r *Reconciler) start(ctx context.Context, req reconcile.Request[*Job], obj store.Object[*Job]) (reconcile.Result, error) {
	job := obj.Value
	// Attempts is read from status, which anyone may write: a count
	// below 0 would buy retries, one past the spec's an overflow.
	attempt := min(max(job.Status.Attempts, 0), maxRetries+1) + 1
	if job.Status.RunGeneration != job.Generation {
		attempt = 1
	}
	st := Status{
		Phase:         Starting,
		Attempts:      attempt,
		RunGeneration: job.Generation,
		RunID:         runID(obj.Key, obj.CreateRevision, job.Generation, attempt),
		ExitCode:      job.Status.ExitCode,
		Message:       fmt.Sprintf("starting attempt %d of %d", attempt, 1+job.Spec.Retries),
	}
	obj, err := resource.WriteStatus(ctx, req.Store, obj, st)
	if err != nil {
		return reconcile.Result{}, err
	}
	return r.launch(ctx, req, obj)
}

// launch starts the recorded attempt, records its process, and waits for
// it. An attempt whose process cannot be started (its argument list too
// long, the program gone) is a failed attempt that says why.
func (r *Reconciler) launch(ctx context.Context, req reconcile.Request[*Job], obj store.Object[*Job]) (reconcile.Result, error) {
	if err := checkSpec(obj.Value.Spec); err != nil {
		return refuse(ctx, req.Store, obj, err) // a recorded intent, its spec since changed
	}
	c, err := r.launcher.launch(obj.Value.Status.RunID, obj.Value.Spec)
	var notStarted *startError
	if errors.As(err, &notStarted) {
		return r.notStarted(ctx, req, obj, notStarted.err)
	}
	if err != nil {
		return reconcile.Result{}, err // the intent stays: the retry launches it
	}
	return r.recordRunning(ctx, req, obj, c.pid, c.ticks)
}

// notStarted records an attempt whose shim could not be started, as its
// shim records a command that cannot start: in its result file (which a
// restarted daemon judges it by), then in status.
func (r *Reconciler) notStarted(ctx context.Context, req reconcile.Request[*Job], obj store.Object[*Job], cause error) (reconcile.Result, error) {
	res := runResult{ExitCode: -1, Error: cause.Error(), Ended: time.Now()}
	runID := obj.Value.Status.RunID
	if err := (runFiles{dir: r.launcher.runsDir, id: runID}).writeResult(res); err != nil {
		// The status below records it all the same; failing that, the
		// retry launches the run again, which fails again.
		reconcile.LoggerFrom(ctx).Warn("could not write the result of an attempt that could not start", "run", runID, "err", err)
	}
	return r.finish(ctx, req, obj, res)
}

// recordRunning records the attempt's process before waiting for it. The
// record is written even if ctx has ended (a shutdown): a process this
// daemon knows of is then stopped and judged by await, not left behind
// unrecorded.
func (r *Reconciler) recordRunning(ctx context.Context, req reconcile.Request[*Job], obj store.Object[*Job], pid int, ticks uint64) (reconcile.Result, error) {
	st := obj.Value.Status
	st.Phase, st.PID, st.StartTicks = Running, pid, ticks
	if st.StartedAt.IsZero() {
		st.StartedAt = time.Now()
	}
	st.Message = fmt.Sprintf("attempt %d of %d running as pid %d", st.Attempts, 1+obj.Value.Spec.Retries, pid)
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	obj, err := resource.WriteStatus(wctx, req.Store, obj, st)
	if err != nil {
		// The process runs on; the retry finds it (settle).
		return reconcile.Result{}, err
	}
	return r.await(ctx, req, obj)
}

// recordTimeout bounds a status write that must happen although the
// reconcile's context has ended (an attempt's process or outcome).
const recordTimeout = 5 * time.Second

// settle deals with a recorded attempt: it waits for its process if it
// runs (adopting one an earlier daemon started), judges it by its result
// file if it has ended, and launches it if it never ran.
func (r *Reconciler) settle(ctx context.Context, req reconcile.Request[*Job], obj store.Object[*Job]) (reconcile.Result, error) {
	st := obj.Value.Status
	log := reconcile.LoggerFrom(ctx)
	if pid, ticks, ok := r.locate(st); ok {
		if r.launcher.child(st.RunID) == nil {
			log.Info("adopting a running attempt", "run", st.RunID, "pid", pid)
		}
		if st.Phase == Starting || st.PID != pid || st.StartTicks != ticks {
			return r.recordRunning(ctx, req, obj, pid, ticks)
		}
		return r.await(ctx, req, obj)
	}
	files := runFiles{dir: r.launcher.runsDir, id: st.RunID}
	res, ok, err := files.readResult()
	switch {
	case err != nil:
		log.Warn("unreadable result file: attempt judged lost", "run", st.RunID, "err", err)
		return r.finish(ctx, req, obj, runResult{ExitCode: -1, Lost: true, Ended: time.Now()})
	case ok:
		if r.launcher.child(st.RunID) == nil {
			log.Info("judging an attempt that ended unwatched by its result file", "run", st.RunID, "exit", res.ExitCode)
		}
		return r.finish(ctx, req, obj, res)
	case files.claimed():
		// It ran and ended without a result (its shim was killed).
		log.Warn("an attempt ended without a result: judged lost", "run", st.RunID)
		return r.finish(ctx, req, obj, runResult{ExitCode: -1, Lost: true, Ended: time.Now()})
	}
	// Never claimed: the command never ran. Launching the same run is safe,
	// since a late shim of it would find the claim taken.
	log.Info("launching a recorded attempt that never ran", "run", st.RunID)
	return r.launch(ctx, req, obj)
}

// locate finds the live process of the recorded attempt: a child of this
// daemon, the recorded process if it is still the same one and the run's
// shim (a pid in status is anyone's to write: it is never signalled unless
// it leads its group and carries the run ID), or a process carrying the
// run ID (an earlier daemon started it but did not record it).
func (r *Reconciler) locate(st Status) (int, uint64, bool) {
	if c := r.launcher.child(st.RunID); c != nil {
		select {
		case <-c.done:
			return 0, 0, false
		default:
			return c.pid, c.ticks, true
		}
	}
	if isRun(st.PID, st.StartTicks, st.RunID) {
		return st.PID, st.StartTicks, true
	}
	return findRun(st.RunID)
}

// await waits for the recorded attempt to end, then judges it. If the job
// is deleted meanwhile (marked, or gone), the attempt is stopped; if the
// controller stops (ctx ends), the attempt is stopped and judged (a failed
// attempt).
func (r *Reconciler) await(ctx context.Context, req reconcile.Request[*Job], obj store.Object[*Job]) (reconcile.Result, error) {
	st := obj.Value.Status
	var done <-chan struct{}
	if c := r.launcher.child(st.RunID); c != nil && c.pid == st.PID {
		done = c.done
	}
	tick := time.NewTicker(r.poll)
	defer tick.Stop()
	stopped := false // the daemon stopped the attempt
	for ended := false; !ended; {
		if done == nil && !procstat.Alive(st.PID, st.StartTicks) {
			break
		}
		if r.deleted(ctx, req, obj) {
			// The next reconcile, woken by the deletion, finds nothing
			// running and removes the finalizer.
			r.stop(context.WithoutCancel(ctx), st.PID, st.StartTicks, done)
			r.launcher.forget(st.RunID)
			return reconcile.Result{}, nil
		}
		select {
		case <-done:
			ended = true
		case <-tick.C:
		case <-ctx.Done():
			stopped = r.stop(context.WithoutCancel(ctx), st.PID, st.StartTicks, done)
			ended = true
		}
	}
	r.launcher.forget(st.RunID)
	res, ok, err := runFiles{dir: r.launcher.runsDir, id: st.RunID}.readResult()
	if err != nil || !ok {
		res = runResult{ExitCode: -1, Lost: true, Ended: time.Now()}
	}
	// The daemon's own knowledge, whatever the shim managed to record
	// (it may have died of the signal before recording anything).
	res.Stopped = res.Stopped || stopped
	if ctx.Err() != nil {
		// Shutting down: record the outcome all the same.
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
		defer cancel()
		return r.finish(wctx, req, obj, res)
	}
	return r.finish(ctx, req, obj, res)
}

// deleted reports whether the job was deleted since obj: marked for
// deletion, as the cache says, or gone (or deleted and created again), as
// the cache says and the store confirms.
func (r *Reconciler) deleted(ctx context.Context, req reconcile.Request[*Job], obj store.Object[*Job]) bool {
	if cur, ok := r.cached(req.Key); ok && cur.CreateRevision == obj.CreateRevision {
		return cur.Value != nil && cur.Value.Deleting()
	}
	cur, err := req.Store.Get(ctx, req.Key)
	return errors.Is(err, store.ErrNotFound) || (err == nil && cur.CreateRevision != obj.CreateRevision)
}

// stop ends an attempt: SIGTERM to its shim, which records the attempt as
// stopped before it passes the signal on to its group, SIGKILL to the group
// after the grace period and a margin. It returns once the process has
// ended, and reports whether it signalled it (false: it had ended already).
func (r *Reconciler) stop(ctx context.Context, pid int, ticks uint64, done <-chan struct{}) bool {
	if !signalProcess(pid, ticks, syscall.SIGTERM) {
		return false
	}
	kill := time.NewTimer(r.launcher.grace + 2*time.Second)
	defer kill.Stop()
	tick := time.NewTicker(r.poll)
	defer tick.Stop()
	for procstat.Alive(pid, ticks) {
		select {
		case <-done:
			return true
		case <-kill.C:
			signalGroup(pid, ticks, syscall.SIGKILL)
		case <-tick.C:
		case <-ctx.Done():
			signalGroup(pid, ticks, syscall.SIGKILL)
		}
	}
	if done != nil {
		<-done
	}
	return true
}

// finish records the outcome of the attempt and decides what follows:
// success, a retry after the backoff (its time stored), or failure.
func (r *Reconciler) finish(ctx context.Context, req reconcile.Request[*Job], obj store.Object[*Job], res runResult) (reconcile.Result, error) {
	job := obj.Value
	st := job.Status
	code := res.ExitCode
	st.ExitCode, st.FinishedAt, st.NextAttemptAt = &code, res.Ended, time.Time{}
	total := 1 + job.Spec.Retries
	what := res.describe(time.Duration(job.Spec.Timeout))
	var result reconcile.Result
	switch {
	case res.ok():
		st.Phase = Succeeded
		st.Message = fmt.Sprintf("attempt %d of %d succeeded", st.Attempts, total)
	case st.Attempts >= total:
		st.Phase = Failed
		st.Message = fmt.Sprintf("attempt %d of %d failed: %s; no retry left", st.Attempts, total, what)
	default:
		delay := r.backoff.Delay(st.Attempts - 1) // 0 for the first failure
		st.Phase, st.NextAttemptAt = Backoff, time.Now().Add(delay)
		st.Message = fmt.Sprintf("attempt %d of %d failed: %s; next attempt in %v", st.Attempts, total, what, delay.Round(time.Millisecond))
		result.RequeueAfter = delay
	}
	if _, err := resource.WriteStatus(ctx, req.Store, obj, st); err != nil {
		return reconcile.Result{}, err // the result file stays: the retry records it
	}
	if st.RunGeneration != job.Generation && result.RequeueAfter == 0 {
		// The attempt ran an older generation (or one its status named):
		// the job's own is due, and no change will wake it.
		result.Requeue = true
	}
	return result, nil
}

// cleanup stops the attempt of a deleted job, if one runs: a child of
// this daemon, or one adopted from an earlier daemon (found as settle
// finds it). An attempt that has ended needs nothing: what it recorded
// goes with the job. It is the finalizer's cleanup, run again after a
// crash, so it treats what is already gone as done.
func (r *Reconciler) cleanup(ctx context.Context, req reconcile.Request[*Job]) error {
	job := withOwnRun(req.Object).Value
	if job == nil || (job.Status.Phase != Starting && job.Status.Phase != Running) {
		return nil
	}
	st := job.Status
	pid, ticks, ok := r.locate(st)
	if !ok {
		reconcile.LoggerFrom(ctx).Info("deleted job: its attempt is not running", "run", st.RunID)
		return nil
	}
	var done <-chan struct{}
	if c := r.launcher.child(st.RunID); c != nil {
		done = c.done
	}
	reconcile.LoggerFrom(ctx).Info("deleted job: stopping its attempt", "run", st.RunID, "pid", pid)
	r.stop(ctx, pid, ticks, done)
	r.launcher.forget(st.RunID)
	return nil
}
