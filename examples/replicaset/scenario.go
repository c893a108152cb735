package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"syscall"
	"time"

	"github.com/converge-go/converge/examples/internal/demo"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/resource"
	"github.com/converge-go/converge/store"
)

// scenario plays the demo's steps against a running controller.
type scenario struct {
	cfg  Config
	say  *narrator
	db   store.Store[*ReplicaSet] // the store itself, always reachable
	net  *Outage[*ReplicaSet]     // the controller's and the user's way to it
	sup  *Supervisor
	ctrl *reconcile.Controller[*ReplicaSet]
	rep  *Report
	want int
}

// play runs every step in order and stops at the first that fails.
func (s *scenario) play(ctx context.Context) error {
	n := s.cfg.Replicas
	if obj, err := s.db.Get(ctx, demoKey); err == nil {
		s.say.say("== resume: %s found in the store from an earlier run: %s (generation %d)",
			demoKey, replicas(obj.Value.Spec.Replicas), obj.Value.Generation)
		s.want = obj.Value.Spec.Replicas
		s.say.setWant(s.want)
		res, err := s.settle(ctx, "resume", time.Now(), nil)
		if err != nil {
			return err
		}
		s.rep.Resumed = &res
	} else if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	steps := []func(context.Context) error{
		func(ctx context.Context) error { return s.scale(ctx, "converge", n) },
		s.powerFailure,
		func(ctx context.Context) error { return s.scale(ctx, "scale up", n+2) },
		func(ctx context.Context) error { return s.scale(ctx, "scale down", max(1, n-1)) },
		s.outage,
	}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			return err
		}
	}
	return nil
}

// scale writes a spec of n pods and waits for it to converge.
func (s *scenario) scale(ctx context.Context, name string, n int) error {
	start := time.Now()
	s.say.say("== %s: %s", name, replicas(n))
	s.want = n
	s.say.setWant(n)
	if _, err := resource.PutSpec(ctx, s.net, demoKey, Spec{Replicas: n}); err != nil {
		return fmt.Errorf("%s: put spec: %w", name, err)
	}
	_, err := s.settle(ctx, name, start, nil)
	return err
}

// powerFailure kills every pod at once with SIGKILL, as a power failure of
// their machine would, and waits for the controller to bring them back.
func (s *scenario) powerFailure(ctx context.Context) error {
	start := time.Now()
	pods := s.sup.Running(demoKey)
	s.say.say("== power failure: SIGKILL to all %d pods", len(pods))
	for _, p := range pods {
		if s.sup.Signal(p.PID, syscall.SIGKILL) {
			s.rep.Killed++
		}
	}
	_, err := s.settle(ctx, "power failure", start, func() bool {
		return !slices.ContainsFunc(pods, func(p Pod) bool { return s.sup.Alive(p.PID) })
	})
	return err
}

// outage makes the store unreachable, kills a pod meanwhile, checks that
// the controller replaces it from its cache, then brings the store back and
// waits for the status to catch up.
func (s *scenario) outage(ctx context.Context) error {
	start := time.Now()
	out := &s.rep.Outage
	s.say.say("== store outage: the controller loses its store for %v", s.cfg.Outage)
	s.net.SetDown(true)
	downAt := time.Now()
	if err := s.waitFor(ctx, "the controller to notice the outage", func() (bool, error) {
		return len(s.ctrl.Health().Degraded) > 0, nil
	}); err != nil {
		return err
	}
	s.say.say("controller: degraded (%s); it keeps healing from its cache", s.ctrl.Health().Degraded[0])

	victim := s.sup.Running(demoKey)[0]
	out.Victim = victim.PID
	s.say.say("== kill pod %d while the store is down", victim.PID)
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
	s.say.say("pod %d replaced by %s with the store down; the stored status still says %s",
		victim.PID, pidList(out.ReplacedWhileDown), pidList(out.StaleStatus))

	hold := time.NewTimer(time.Until(downAt.Add(s.cfg.Outage)))
	defer hold.Stop()
	select {
	case <-hold.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	upAt := time.Now()
	out.Down = upAt.Sub(downAt)
	s.net.SetDown(false)
	s.say.say("== store reachable again after %.1fs", out.Down.Seconds())

	if err := s.waitFor(ctx, "the status to catch up", func() (bool, error) {
		obj, err := s.db.Get(ctx, demoKey)
		return err == nil && converged(obj.Value, s.sup.Running(demoKey)), err
	}); err != nil {
		return err
	}
	out.StatusCaughtUp = time.Since(upAt)
	s.say.say("status caught up %.1fs after the store returned", out.StatusCaughtUp.Seconds())
	_, err := s.settle(ctx, "store outage", start, func() bool { return len(s.ctrl.Health().Degraded) == 0 })
	if err == nil {
		s.say.say("controller: following the store again")
	}
	return err
}

// settle waits until s.want pods run, the stored status says so for the
// latest generation, and also (if not nil) holds; then it records the
// step's result.
func (s *scenario) settle(ctx context.Context, name string, start time.Time, also func() bool) (PhaseResult, error) {
	res := PhaseResult{Name: name, Want: s.want}
	err := s.waitFor(ctx, fmt.Sprintf("%s: %d pods and their status", name, s.want), func() (bool, error) {
		if also != nil && !also() {
			return false, nil
		}
		pods := s.sup.Running(demoKey)
		if len(pods) != s.want {
			return false, nil
		}
		obj, err := s.db.Get(ctx, demoKey)
		if err != nil {
			return false, err
		}
		if !converged(obj.Value, pods) {
			return false, nil
		}
		rs := obj.Value
		res.Pods, res.Ready = rs.Status.Pods, rs.Status.ReadyReplicas
		res.Generation, res.ObservedGeneration = rs.Generation, rs.ObservedGeneration
		return true, nil
	})
	if err != nil {
		return res, err
	}
	res.Took = time.Since(start)
	s.rep.Phases = append(s.rep.Phases, res)
	return res, nil
}

// converged reports whether rs's status records exactly the running pods,
// for the latest generation, and that they are as many as the spec asks.
func converged(rs *ReplicaSet, running []Pod) bool {
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

// waitFor waits, within the configured timeout, for cond (see
// demo.WaitFor).
func (s *scenario) waitFor(ctx context.Context, what string, cond func() (bool, error)) error {
	return demo.WaitFor(ctx, what, s.cfg.Timeout, cond)
}
