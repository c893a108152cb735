// Package demo holds what the narrated demos of the examples (replicaset,
// failover) share, so that each demo's files hold only its own story: the
// process around a demo (Main, and TestMain for its tests), the narration
// (Narrator, Summary, and Status, Count and PIDList to format), the
// scenario loop (Play), the wait for a replica set to converge
// (WaitConverged), the shutdown of the pods (StopPods) and the checks
// their tests make (AssertNoProcessLeft).
package demo
