package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/converge-go/converge/examples/internal/demo"
	"github.com/converge-go/converge/examples/internal/etcdflag"
	"github.com/converge-go/converge/examples/internal/pods"
	"github.com/converge-go/converge/examples/replicaset/controller"
	"github.com/converge-go/converge/lock"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/etcdstore"
)

// scenario plays the demo's steps against the running replicas.
type scenario struct {
	cfg      Config
	say      *narrator
	objects  store.Store[*controller.ReplicaSet] // the operator's, unfenced
	leases   store.Store[lock.Record]            // the operator's view of the lease record
	etcd     *etcdflag.Etcd
	sup      *pods.Supervisor
	terms    *terms
	replicas map[string]*replica
	rep      *Report
	want     int
	late     *inFlight // the crashed leader's write, from crash to lateWrite
}

// play runs every step in order and stops at the first that fails.
func (s *scenario) play(ctx context.Context) (err error) {
	defer func() {
		if s.late != nil {
			err = errors.Join(err, s.late.close())
		}
	}()
	n := s.cfg.Pods
	return demo.Play(ctx,
		func(ctx context.Context) error { return s.scale(ctx, "converge", n) },
		s.crash,
		s.lateWrite,
		func(ctx context.Context) error { return s.scale(ctx, "scale up", n+2) },
	)
}

// scale has the operator write a spec of n pods and waits until the leader
// has converged to it.
func (s *scenario) scale(ctx context.Context, name string, n int) error {
	start, startedBefore := time.Now(), s.sup.Stats().Started
	s.say.Say("== %s: the operator asks for %s", name, demo.Count(n, "pod"))
	s.want = n
	s.say.SetWant(n)
	obj, err := resource.PutSpec(ctx, s.objects, demoKey, controller.Spec{Replicas: n})
	if err != nil {
		return fmt.Errorf("%s: put spec: %w", name, err)
	}
	s.say.Say("operator: spec written (%s, generation %d)", demo.Count(n, "pod"), obj.Value.Generation)
	return s.settle(ctx, name, start, startedBefore, s.cfg.Timeout)
}

// crash has the leader send a status write that the network holds (see
// sendLateWrite), crashes it, checks that its lease record survives the
// crash, and waits for another replica to take over and adopt the pods.
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
	if err := s.sendLateWrite(ctx, old); err != nil {
		return err
	}
	s.say.Say("== crash: %s, the leader, dies: cut off from etcd at once, its manager stopped, its lease not released", old.Replica)
	out.At = time.Now()
	startedBefore := s.sup.Stats().Started
	if err := s.replicas[old.Replica].crash(); err != nil {
		// A crashed process reports nothing; its error only explains.
		s.say.Say("%s: %v", old.Replica, err)
	}
	rec, err := s.leases.Get(ctx, leaseKey)
	switch {
	case err == nil && rec.CreateRevision == old.Token:
		out.RecordKept = true
		s.say.Say("%s is down; its lease record (token %d) stays in etcd, no longer renewed: the others wait for it to stay unchanged for a TTL",
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
	s.say.Say("%s took over %.2fs after the crash (lease TTL %v)", next.Replica, out.Handover.Seconds(), s.cfg.TTL)
	if err := s.settle(ctx, "takeover", out.At, startedBefore, s.cfg.Timeout); err != nil {
		return err
	}
	if s.rep.Phases[len(s.rep.Phases)-1].Started == 0 {
		s.say.Say("%s adopted the %d running pods: nothing to start, status already right", next.Replica, s.want)
	}
	return nil
}

// inFlight is the status write the leader sent just before it crashed,
// held by the network until lateWrite delivers it.
type inFlight struct {
	obj    store.Object[*controller.ReplicaSet] // the object it was written against
	net    *delayed[*controller.ReplicaSet]
	client *clientv3.Client // its connection
	cancel context.CancelFunc
	done   chan struct{} // closed once the write has returned
	err    error         // the write's error, once done
}

// wait returns the write's error once it has returned.
func (f *inFlight) wait() error {
	<-f.done
	return f.err
}

// close abandons the write if it is still held and closes its connection.
func (f *inFlight) close() error {
	f.cancel()
	<-f.done
	return f.client.Close()
}

// sendLateWrite has the leader, while its term is still current, send a
// status write that the network then holds (see delayed). It writes as code
// outside a reconcile writes for a term: through lock.Fenced with the term's
// lock, which checks that the term is current and adds its guard. The write
// passes that check, so from here on only etcd can refuse it.
func (s *scenario) sendLateWrite(ctx context.Context, old Term) error {
	obj, err := s.objects.Get(ctx, demoKey)
	if err != nil {
		return fmt.Errorf("late write: %w", err)
	}
	client, err := s.etcd.Client()
	if err != nil {
		return err
	}
	raw, err := etcdstore.New[*controller.ReplicaSet](client, etcdPrefix)
	if err != nil {
		return errors.Join(err, client.Close())
	}
	net := newDelayed[*controller.ReplicaSet](raw)
	fenced, err := lock.Fenced[*controller.ReplicaSet](net, old.lock)
	if err != nil {
		return errors.Join(err, client.Close())
	}
	wctx, cancel := context.WithCancel(ctx)
	late := &inFlight{obj: obj, net: net, client: client, cancel: cancel, done: make(chan struct{})}
	s.late = late
	pids := late.obj.Value.Status.Pods
	status := controller.Status{ReadyReplicas: len(pids), Pods: pids}
	ready := resource.Condition{Type: controller.ConditionReady, Status: resource.ConditionFalse, Reason: "Scaling",
		Message: fmt.Sprintf("sent by %s in the term of token %d", old.Replica, old.Token)}
	go func() {
		defer close(late.done)
		_, late.err = resource.WriteStatus(wctx, fenced, late.obj, status, ready)
	}()
	select {
	case <-late.net.sent:
	case <-late.done:
		return fmt.Errorf("late write: refused before it was sent, while its term was current: %w", late.err)
	case <-ctx.Done():
		return ctx.Err()
	}
	s.say.Say("%s, still leading, sends a status write (Ready=False, pods %s) under its term (token %d); the network holds it",
		old.Replica, demo.PIDList(pids), old.Token)
	return nil
}

// lateWrite delivers the crashed leader's write after the takeover, as a
// network that delayed it would; etcd must reject it, the replica set
// untouched.
func (s *scenario) lateWrite(ctx context.Context) error {
	out := &s.rep.LateWrite
	old := s.rep.Crash.Old
	out.Term = old
	late := s.late
	cur, err := s.objects.Get(ctx, demoKey)
	if err != nil {
		return fmt.Errorf("late write: %w", err)
	}
	out.SameRevision = cur.Revision == late.obj.Revision
	s.say.Say("== late write: the network delivers the status write %s sent under its term (token %d)", old.Replica, old.Token)
	if out.SameRevision {
		s.say.Say("the replica set has not changed since (revision %d): its compare-and-swap would pass, only the term's guard can stop it", cur.Revision)
	}
	late.net.deliver()
	out.Err = late.wait()
	if !errors.Is(out.Err, store.ErrGuardFailed) {
		return fmt.Errorf("late write: got error %v, want one matching store.ErrGuardFailed", out.Err)
	}
	s.say.Say("etcd rejected it: %v", out.Err)

	after, err := s.objects.Get(ctx, demoKey)
	if err != nil {
		return fmt.Errorf("late write: %w", err)
	}
	out.Unchanged = after.Revision == cur.Revision
	if !out.Unchanged {
		return fmt.Errorf("late write: the replica set changed (revision %d to %d)", cur.Revision, after.Revision)
	}
	s.say.Say("the replica set is untouched: still %s %s", demo.Count(len(after.Value.Status.Pods), "pod"), demo.PIDList(after.Value.Status.Pods))
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

// settle waits until the replica set has converged (demo.WaitConverged)
// under a leader, and its status write has been narrated; then it records
// the step's result: the step began at start, when the supervisor had
// started startedBefore pods.
func (s *scenario) settle(ctx context.Context, name string, start time.Time, startedBefore int, limit time.Duration) error {
	var leader Term
	obj, err := demo.WaitConverged(ctx, name, s.objects, s.sup, demoKey, s.want, limit, func(obj store.Object[*controller.ReplicaSet]) bool {
		var ok bool
		leader, ok = s.terms.current()
		// The status is the controller's: wait until its write is narrated.
		return ok && s.say.writtenRevision() >= obj.Revision
	})
	if err != nil {
		return err
	}
	rs := obj.Value
	s.rep.Phases = append(s.rep.Phases, PhaseResult{Name: name, Leader: leader.Replica, Want: s.want, Pods: rs.Status.Pods,
		Generation: rs.Generation, ObservedGeneration: rs.ObservedGeneration,
		Started: s.sup.Stats().Started - startedBefore, Took: time.Since(start)})
	return nil
}

// waitFor waits, within limit, for cond (see demo.WaitFor).
func (s *scenario) waitFor(ctx context.Context, what string, limit time.Duration, cond func() (bool, error)) error {
	return demo.WaitFor(ctx, what, limit, cond)
}
