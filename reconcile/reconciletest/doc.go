// Package reconciletest tests reconcilers: it runs controllers inside a
// testing/synctest bubble until they are idle, checks that converged
// controllers go idle and stay so (CheckIdle: no reconcile, no write,
// none of them waking itself for ever), and that a converged system
// stays still when every key is reconciled again (idempotency),
// injects store faults (through store/faultstore, whose writes Wrap counts),
// and detects a key reconciled by two workers at once.
//
// A typical test:
//
//	synctest.Test(t, func(t *testing.T) {
//		env := reconciletest.NewEnv(t)
//		s := reconciletest.Wrap(env, store.NewMemory[*Spec](), faultstore.Options{
//			Rand: rand.New(rand.NewPCG(1, 0)), Rates: faultstore.Rates{Error: 0.1},
//		})
//		c, _ := reconcile.New(s, reconciletest.Exclusive(t, myReconciler), reconcile.Options[*Spec]{
//			Name: "test", Metrics: env.Metrics(),
//		})
//		env.Start(c)
//		counts := env.Converge(time.Minute)
//		env.CheckIdempotent(time.Minute, world.Snapshot)
//	})
//
// Everything runs on the bubble's fake clock: backoffs, delays and injected
// latency take no real time, and a goroutine left behind fails the test.
package reconciletest
