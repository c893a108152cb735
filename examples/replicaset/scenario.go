package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"syscall"
	"time"

	"github.com/converge-go/converge/examples/internal/demo"
	"github.com/converge-go/converge/examples/internal/pods"
	"github.com/converge-go/converge/examples/replicaset/controller"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/faultstore"
)

// scenario plays the demo's steps against a running controller.
type scenario struct {
	cfg Config
	say *demo.Narrator
	// demoStore is the store now, and places where it lives: the
	// disk-loss step replaces it with the one restored there.
	*demoStore
	places storePlaces
	sup    *pods.Supervisor
	rig    *rig
	proc   *controllerProc // the controller running now
	rep    *Report
	want   int
}

// play resumes the replica set an earlier run left, if any, then runs
// every step in order and stops at the first that fails.
func (s *scenario) play(ctx context.Context) error {
	n := s.cfg.Replicas
	if obj, err := s.db.Get(ctx, demoKey); err == nil {
		s.say.Say("== resume: %s found in the store from an earlier run: %s (generation %d)",
			demoKey, demo.Count(obj.Value.Spec.Replicas, "replica"), obj.Value.Generation)
		s.setWant(obj.Value.Spec.Replicas)
		res, err := s.settle(ctx, "resume", time.Now(), nil)
		if err != nil {
			return err
		}
		s.rep.Resumed = &res
	} else if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	return demo.Play(ctx,
		func(ctx context.Context) error { return s.scale(ctx, "converge", n) },
		s.powerFailure,
		func(ctx context.Context) error { return s.scale(ctx, "scale up", n+2) },
		func(ctx context.Context) error { return s.scale(ctx, "scale down", max(1, n-1)) },
		s.outage,
		s.storeAndControllerGone,
		s.deleteWhileDown,
		s.diskLost,
	)
}

func (s *scenario) setWant(n int) {
	s.want = n
	s.say.SetWant(n)
}

// scale writes a spec of n pods and waits for it to converge.
func (s *scenario) scale(ctx context.Context, name string, n int) error {
	start := time.Now()
	s.say.Say("== %s: %s", name, demo.Count(n, "replica"))
	s.setWant(n)
	if _, err := resource.PutSpec(ctx, s.api, demoKey, controller.Spec{Replicas: n}); err != nil {
		return fmt.Errorf("%s: put spec: %w", name, err)
	}
	_, err := s.settle(ctx, name, start, nil)
	return err
}

// powerFailure kills every pod at once with SIGKILL, as a power failure of
// their machine would, and waits for the controller to bring them back.
func (s *scenario) powerFailure(ctx context.Context) error {
	start := time.Now()
	running := s.sup.Running(demoKey)
	s.say.Say("== power failure: SIGKILL to all %d pods", len(running))
	for _, p := range running {
		if s.sup.Signal(p.PID, syscall.SIGKILL) {
			s.rep.Killed++
		}
	}
	_, err := s.settle(ctx, "power failure", start, func() bool {
		return !slices.ContainsFunc(running, func(p pods.Pod) bool { return s.sup.Alive(p.PID) })
	})
	return err
}

// outage makes the store unreachable (a loud outage: every call fails with
// store.ErrUnavailable and every watch ends), kills a pod meanwhile, checks
// that the controller replaces it from its cache, then brings the store
// back and waits for the status to catch up.
func (s *scenario) outage(ctx context.Context) error {
	start := time.Now()
	out := &s.rep.Outage
	s.say.Say("== store outage: the controller loses its store for %v", s.cfg.Outage)
	s.net.SetOutage(faultstore.Loud)
	downAt := time.Now()
	if err := s.waitFor(ctx, "the controller to notice the outage", func() (bool, error) {
		return len(s.proc.ctrl.Health().Degraded) > 0, nil
	}); err != nil {
		return err
	}
	s.say.Say("controller: degraded (%s); it keeps healing from its cache", s.proc.ctrl.Health().Degraded[0])

	victim := s.sup.Running(demoKey)[0]
	out.Victim = victim.PID
	s.say.Say("== kill pod %d while the store is down", victim.PID)
	if s.sup.Signal(victim.PID, syscall.SIGKILL) {
		s.rep.Killed++
	}
	if err := s.waitFor(ctx, "a replacement pod while the store is down", func() (bool, error) {
		return !s.sup.Alive(victim.PID) && len(s.sup.Running(demoKey)) == s.want, nil
	}); err != nil {
		return err
	}
	for _, p := range s.sup.Running(demoKey) {
		if p.Started.After(downAt) {
			out.ReplacedWhileDown = append(out.ReplacedWhileDown, p.PID)
		}
	}
	if obj, err := s.db.Get(ctx, demoKey); err == nil {
		out.StaleStatus = obj.Value.Status.Pods
	}
	s.say.Say("pod %d replaced by %s with the store down; the stored status still says %s",
		victim.PID, demo.PIDList(out.ReplacedWhileDown), demo.PIDList(out.StaleStatus))

	hold := time.NewTimer(time.Until(downAt.Add(s.cfg.Outage)))
	defer hold.Stop()
	select {
	case <-hold.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	upAt := time.Now()
	out.Down = upAt.Sub(downAt)
	s.net.SetOutage(faultstore.Up)
	s.say.Say("== store reachable again after %.1fs", out.Down.Seconds())

	if err := s.waitFor(ctx, "the status to catch up", func() (bool, error) {
		obj, err := s.db.Get(ctx, demoKey)
		return err == nil && demo.Converged(obj.Value, s.sup.Running(demoKey)), err
	}); err != nil {
		return err
	}
	out.StatusCaughtUp = time.Since(upAt)
	s.say.Say("status caught up %.1fs after the store returned", out.StatusCaughtUp.Seconds())
	_, err := s.settle(ctx, "store outage", start, func() bool { return len(s.proc.ctrl.Health().Degraded) == 0 })
	if err == nil {
		s.say.Say("controller: following the store again")
	}
	return err
}

// batchKey is the replica set the deletion step makes and deletes, and
// batchPods its pod count.
const (
	batchKey  = "batch"
	batchPods = 2
)

// deleteWhileDown shows the finalizer at work. A second replica set runs
// its pods; the controller stops; the replica set is deleted, and the
// store only marks it, since it carries the controller's finalizer; its
// pods run on. The controller starts again with nothing cached, as a
// restarted process: it finds the replica set marked, stops its pods and
// removes the finalizer, which removes the replica set. The demo's own
// replica set keeps its pods throughout.
func (s *scenario) deleteWhileDown(ctx context.Context) error {
	out := &s.rep.Deletion
	out.Key = batchKey
	s.say.Say("== delete while the controller is down: a second replica set, %s, of %s", batchKey, demo.Count(batchPods, "pod"))
	s.say.SetWantOf(batchKey, batchPods)
	if _, err := resource.PutSpec(ctx, s.api, batchKey, controller.Spec{Replicas: batchPods}); err != nil {
		return fmt.Errorf("delete while down: put spec: %w", err)
	}
	obj, err := demo.WaitConverged(ctx, "delete while down", s.db, s.sup, batchKey, batchPods, s.cfg.Timeout, nil)
	if err == nil {
		err = s.narrator.caughtUp(ctx, obj.Revision, s.cfg.Timeout)
	}
	if err != nil {
		return err
	}
	out.Pods, out.WebPods = obj.Value.Status.Pods, pidsOf(s.sup.Running(demoKey))

	s.say.Say("== the controller stops")
	err = s.proc.stop()
	s.proc = nil // stopped: Run does not stop it again
	if err != nil {
		return fmt.Errorf("delete while down: stop the controller: %w", err)
	}
	rev, _, err := s.api.DeleteWith(ctx, batchKey, obj.Revision, apistore.Background)
	if err == nil {
		err = s.narrator.caughtUp(ctx, rev, s.cfg.Timeout)
	}
	if err != nil {
		return fmt.Errorf("delete while down: %w", err)
	}
	if left, err := s.db.Get(ctx, batchKey); err == nil && left.Value.Deleting() {
		out.Marked = true
	}
	out.RunningWhileDown = pidsOf(s.sup.Running(batchKey))
	s.say.Say("%s deleted while no controller runs: the store keeps it, marked, as finalizer %s holds it; its pods %s run on",
		batchKey, controller.Finalizer, demo.PIDList(out.RunningWhileDown))
	s.say.SetWantOf(batchKey, 0)

	s.say.Say("== the controller starts again, with nothing cached")
	startedAt := time.Now()
	if s.proc, err = s.rig.start(ctx); err != nil {
		return err
	}
	if err := s.waitFor(ctx, batchKey+" gone, its pods stopped", func() (bool, error) {
		_, err := s.db.Get(ctx, batchKey)
		if !errors.Is(err, store.ErrNotFound) {
			return false, err
		}
		return len(s.sup.Running(batchKey)) == 0, nil
	}); err != nil {
		return err
	}
	out.Gone, out.Left = time.Since(startedAt), pods.Survivors(out.Pods)
	if rev, err = s.db.Revision(ctx); err == nil {
		err = s.narrator.caughtUp(ctx, rev, s.cfg.Timeout)
	}
	if err != nil {
		return err
	}
	s.say.Say("%s is gone %v after the controller started: it stopped the pods, then removed the finalizer", batchKey, out.Gone.Round(time.Millisecond))
	if _, err := demo.WaitConverged(ctx, "delete while down", s.db, s.sup, demoKey, s.want, s.cfg.Timeout, nil); err != nil {
		return err
	}
	out.WebPodsAfter = pidsOf(s.sup.Running(demoKey))
	return nil
}

// pidsOf returns the pods' pids, in ascending order.
func pidsOf(running []pods.Pod) []int {
	pids := make([]int, len(running))
	for i, p := range running {
		pids[i] = p.PID
	}
	slices.Sort(pids)
	return pids
}

// settle waits until the replica set has converged (demo.WaitConverged)
// and also, if not nil, holds; then it records the step's result.
func (s *scenario) settle(ctx context.Context, name string, start time.Time, also func() bool) (PhaseResult, error) {
	obj, err := demo.WaitConverged(ctx, name, s.db, s.sup, demoKey, s.want, s.cfg.Timeout,
		func(store.Object[*controller.ReplicaSet]) bool { return also == nil || also() })
	if err != nil {
		return PhaseResult{}, err
	}
	if err := s.narrator.caughtUp(ctx, obj.Revision, s.cfg.Timeout); err != nil {
		return PhaseResult{}, err
	}
	rs := obj.Value
	res := PhaseResult{Name: name, Want: s.want, Pods: rs.Status.Pods, Ready: rs.Status.ReadyReplicas,
		Generation: rs.Generation, ObservedGeneration: rs.ObservedGeneration, Took: time.Since(start)}
	s.rep.Phases = append(s.rep.Phases, res)
	return res, nil
}

// waitFor waits, within the configured timeout, for cond (see
// demo.WaitFor).
func (s *scenario) waitFor(ctx context.Context, what string, cond func() (bool, error)) error {
	return demo.WaitFor(ctx, what, s.cfg.Timeout, cond)
}
