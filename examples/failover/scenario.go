package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/converge-go/converge/examples/internal/demo"

	"github.com/converge-go/converge/examples/replicaset/replicaset"
	"github.com/converge-go/converge/lock"
	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/etcdstore"
)

// scenario plays the demo's steps against the running replicas.
type scenario struct {
	cfg      Config
	say      *narrator
	objects  store.Store[*replicaset.ReplicaSet] // the operator's, unfenced
	leases   store.Store[lock.Record]            // the operator's view of the lease record
	endpoint string
	sup      *replicaset.Supervisor
	terms    *terms
	replicas map[string]*replica
	rep      *Report
	want     int
}

// play runs every step in order and stops at the first that fails.
func (s *scenario) play(ctx context.Context) error {
	n := s.cfg.Pods
	steps := []func(context.Context) error{
		func(ctx context.Context) error { return s.scale(ctx, "converge", n) },
		s.crash,
		func(ctx context.Context) error { return s.scale(ctx, "scale up", n+2) },
		s.lateWrite,
	}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			return err
		}
	}
	return nil
}

// scale has the operator write a spec of n pods and waits until the leader
// has converged to it.
func (s *scenario) scale(ctx context.Context, name string, n int) error {
	start, startedBefore := time.Now(), s.sup.Stats().Started
	s.say.say("== %s: the operator asks for %s", name, pods(n))
	s.want = n
	s.say.setWant(n)
	obj, err := reconcile.PutSpec(ctx, s.objects, demoKey, replicaset.Spec{Replicas: n})
	if err != nil {
		return fmt.Errorf("%s: put spec: %w", name, err)
	}
	s.say.say("operator: spec written (%s, generation %d)", pods(n), obj.Value.Generation)
	return s.settle(ctx, name, start, startedBefore, s.cfg.Timeout)
}

// crash crashes the leader, checks that its lease record survives it, and
// waits for another replica to take over and adopt the pods.
func (s *scenario) crash(ctx context.Context) error {
	out := &s.rep.Crash
	var old Term
	if err := s.waitFor(ctx, "a leader to crash", s.cfg.TTL+s.cfg.Timeout, func() (bool, error) {
		t, ok := s.terms.current()
		old = t
		return ok, nil
	}); err != nil {
		return err
	}
	out.Old = old
	s.say.say("== crash: %s, the leader, dies: cut off from etcd at once, its manager stopped, its lease not released", old.Replica)
	out.At = time.Now()
	startedBefore := s.sup.Stats().Started
	if err := s.replicas[old.Replica].crash(); err != nil {
		// A crashed process reports nothing; its error only explains.
		s.say.say("%s: %v", old.Replica, err)
	}
	rec, err := s.leases.Get(ctx, leaseKey)
	switch {
	case err == nil && rec.CreateRevision == old.Token:
		out.RecordKept = true
		s.say.say("%s is down; its lease record (token %d) stays in etcd, no longer renewed: the others wait for it to stay unchanged for a TTL",
			old.Replica, old.Token)
	case err == nil:
		return fmt.Errorf("crash: the lease record is already another term's (token %d, held by %s)", rec.CreateRevision, rec.Value.Holder)
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("crash: %s released its lease: the crash was not abrupt", old.Replica)
	default:
		return fmt.Errorf("crash: read the lease record: %w", err)
	}

	var next Term
	if err := s.waitFor(ctx, "another replica to take over", s.cfg.TTL+s.cfg.Timeout, func() (bool, error) {
		t, ok := s.terms.current()
		next = t
		return ok && t.Token != old.Token, nil
	}); err != nil {
		return err
	}
	out.New = next
	out.Handover = next.Start.Sub(out.At)
	s.say.say("%s took over %.2fs after the crash (lease TTL %v)", next.Replica, out.Handover.Seconds(), s.cfg.TTL)
	if err := s.settle(ctx, "takeover", out.At, startedBefore, s.cfg.Timeout); err != nil {
		return err
	}
	if s.rep.Phases[len(s.rep.Phases)-1].Started == 0 {
		s.say.say("%s adopted the %d running pods: nothing to start, status already right", next.Replica, s.want)
	}
	return nil
}

// lateWrite has the crashed leader's term write the replica set's status
// after the takeover, as a process that was paused rather than dead, or a
// request delayed in the network, would. The write goes through the same
// fenced path as the controller's writes, with the old term's guard, on a
// fresh connection; etcd must reject it.
func (s *scenario) lateWrite(ctx context.Context) error {
	out := &s.rep.LateWrite
	old := s.rep.Crash.Old
	out.Term = old
	stale := s.rep.Phases[0]
	s.say.say("== late write: %s, back from the dead, writes the status of its term (token %d): %s %s",
		old.Replica, old.Token, pods(len(stale.Pods)), pidList(stale.Pods))

	client, err := newClient(s.endpoint)
	if err != nil {
		return err
	}
	defer client.Close()
	st, err := etcdstore.New[*replicaset.ReplicaSet](client, etcdPrefix)
	if err != nil {
		return err
	}
	cur, err := s.objects.Get(ctx, demoKey)
	if err != nil {
		return fmt.Errorf("late write: %w", err)
	}
	status := replicaset.Status{ReadyReplicas: len(stale.Pods), Pods: stale.Pods}
	ready := reconcile.Condition{Type: replicaset.ConditionReady, Status: reconcile.ConditionFalse, Reason: "Scaling", Message: "written by a deposed leader"}
	_, out.Err = reconcile.WriteStatus(withTerm(ctx, old), &fencedStore{Store: st}, cur, status, ready)
	if !errors.Is(out.Err, store.ErrGuardFailed) {
		return fmt.Errorf("late write: got error %v, want one matching store.ErrGuardFailed", out.Err)
	}
	s.say.say("etcd rejected it: %v", out.Err)

	after, err := s.objects.Get(ctx, demoKey)
	if err != nil {
		return fmt.Errorf("late write: %w", err)
	}
	out.Unchanged = after.Revision == cur.Revision
	if !out.Unchanged {
		return fmt.Errorf("late write: the replica set changed (revision %d to %d)", cur.Revision, after.Revision)
	}
	s.say.say("the replica set is untouched: still %s %s", pods(len(after.Value.Status.Pods)), pidList(after.Value.Status.Pods))
	return nil
}

// stopReplicas stops the followers, then the leader, so that no follower
// takes over the lease the leader releases.
func (s *scenario) stopReplicas() error {
	leader, _ := s.terms.current()
	var errs []error
	for name, r := range s.replicas {
		if name != leader.Replica {
			errs = append(errs, r.stop())
		}
	}
	if r, ok := s.replicas[leader.Replica]; ok {
		errs = append(errs, r.stop())
	}
	return errors.Join(errs...)
}

// settle waits until s.want pods run and the stored status records exactly
// them for the latest generation, then records the step's result: the step
// began at start, when the supervisor had started startedBefore pods.
func (s *scenario) settle(ctx context.Context, name string, start time.Time, startedBefore int, limit time.Duration) error {
	res := PhaseResult{Name: name, Want: s.want}
	err := s.waitFor(ctx, fmt.Sprintf("%s: %s and their status", name, pods(s.want)), limit, func() (bool, error) {
		leader, ok := s.terms.current()
		if !ok {
			return false, nil
		}
		running := s.sup.Running(demoKey)
		if len(running) != s.want {
			return false, nil
		}
		obj, err := s.objects.Get(ctx, demoKey)
		if err != nil {
			return false, err
		}
		// The status is the controller's: wait until its write is narrated.
		if !converged(obj.Value, running) || s.say.writtenRevision() < obj.Revision {
			return false, nil
		}
		rs := obj.Value
		res.Leader, res.Pods = leader.Replica, rs.Status.Pods
		res.Generation, res.ObservedGeneration = rs.Generation, rs.ObservedGeneration
		return true, nil
	})
	if err != nil {
		return err
	}
	res.Took = time.Since(start)
	res.Started = s.sup.Stats().Started - startedBefore
	s.rep.Phases = append(s.rep.Phases, res)
	return nil
}

// converged reports whether rs's status records exactly the running pods,
// for the latest generation, and that they are as many as the spec asks.
func converged(rs *replicaset.ReplicaSet, running []replicaset.Pod) bool {
	pids := make([]int, len(running))
	for i, p := range running {
		pids[i] = p.PID
	}
	slices.Sort(pids)
	return rs.ObservedGeneration == rs.Generation &&
		rs.Spec.Replicas == len(running) &&
		rs.Status.ReadyReplicas == len(running) &&
		slices.Equal(rs.Status.Pods, pids)
}

// waitFor waits, within limit, for cond (see demo.WaitFor).
func (s *scenario) waitFor(ctx context.Context, what string, limit time.Duration, cond func() (bool, error)) error {
	return demo.WaitFor(ctx, what, limit, cond)
}
