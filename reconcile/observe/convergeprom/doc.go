// Package convergeprom exports converge's controller and workqueue
// metrics to Prometheus under controller-runtime's names, labels, buckets
// and meanings, so that dashboards and alerts written for
// controller-runtime read true, plus converge's own series.
//
// It is a module of its own (github.com/converge-go/converge/reconcile/observe/convergeprom),
// so that converge's core does not depend on client_golang. Nothing is
// registered globally and nothing runs in the background: New registers
// on the Registerer the caller gives, the hooks update counters and
// histograms, and the gauges are computed when the registry is gathered.
//
// # Wiring
//
//	m, err := convergeprom.New(registry)
//	...
//	opts := reconcile.Options[Job]{Name: "jobs", Workers: 4}
//	ctl := convergeprom.Instrument(m, &opts) // sets opts.Metrics and opts.QueueMetrics
//	c, err := reconcile.New(st, rec, opts)
//	ctl.Watch(c) // stale keys and store degraded, read at scrape time
//
// Instrument is short for m.Controller(name, ControllerOptions{Workers,
// Timeout}) given as both Metrics and QueueMetrics. Call the Controller's
// SetWorkers with the controller's. A Metrics alone also serves as
// reconcile.Options.Metrics for any number of controllers.
//
// # controller-runtime's series
//
// Reconciles: controller_runtime_reconcile_total{controller,result},
// controller_runtime_reconcile_errors_total{controller},
// controller_runtime_terminal_reconcile_errors_total{controller},
// controller_runtime_reconcile_panics_total{controller},
// controller_runtime_reconcile_timeouts_total{controller},
// controller_runtime_reconcile_time_seconds{controller} (controller-runtime's
// buckets), controller_runtime_active_workers{controller} and
// controller_runtime_max_concurrent_reconciles{controller}. A failure, a
// terminal failure and a panic are all result="error" and count in
// errors_total; a terminal one also in terminal_reconcile_errors_total, a
// panic also in reconcile_panics_total. A write conflict, which converge
// reconciles again at once against the newer object, is result="conflict"
// (reconcile.Outcome.Result) and not an error. A reconcile lasting at least
// the controller's Timeout counts as a timeout.
//
// Workqueue (labels name and controller, both the controller's name):
// workqueue_depth{name,controller,priority}, workqueue_adds_total,
// workqueue_queue_duration_seconds, workqueue_work_duration_seconds,
// workqueue_unfinished_work_seconds,
// workqueue_longest_running_processor_seconds and workqueue_retries_total,
// counted as controller-runtime's default (priority) workqueue counts
// them, which is not how converge's queue.Metrics hooks count:
//   - adds_total counts a key when it becomes due: added ready, its delay
//     run out (a delayed add counts when it becomes ready, not at the call),
//     or added while processing (handed out again after Done). A
//     deduplicated add does not count (queue.Metrics.Added counts every
//     add); the adapter counts queue.DueMetrics.Due instead.
//   - retries_total counts every add with a positive delay: rate-limited
//     requeues, RequeueAfter, delayed adds, and converge's backoff after a
//     failure or panic (which converge adds with a delay rather than as a
//     rate-limited add, so queue.Metrics.Retried misses it); the
//     adapter counts queue.DueMetrics.Delayed instead.
//   - depth counts due keys by priority, including a key processing and
//     marked to be handed out again (converge's Depth hook leaves those
//     out); a priority once seen stays as a series (at 0 when empty), and
//     past 25 priorities depth is reported under
//     priority="exceeded_cardinality_limit", as controller-runtime does.
//   - unfinished work, longest running and depth are read from the queue
//     (queue.ProbeMetrics) at scrape time rather than every 500ms.
//
// The series appear when controller-runtime's do: the counters and
// gauges of a controller and its queue when Controller (or Instrument)
// names it, reconcile_time_seconds at the first reconcile.
//
// # converge's own series
//
// converge_convergence_latency_seconds{controller}: from a change observed
// to the successful reconcile covering it, retries included
// (reconcile.Metrics.Converged). converge_stale_keys{controller} and
// converge_store_degraded{controller}: Health().Stale, and 1 while
// Health().Degraded is not empty, read at scrape time from the controller
// given to Watch. converge_fenced_writes_rejected_total{controller}: writes
// of a deposed owner that the fence refused (reconcile.Metrics.WriteRejected).
// converge_refused_keys_total{controller}: keys a source, a FromStore
// mapper or Enqueue handed in outside the controller's view (not a valid
// store key, or not under its Prefix), refused and never reconciled
// (reconcile.Metrics.KeyRefused, Health().Refused); above 0, the code that
// maps events to keys has a bug.
// converge_dependency_up{controller,dependency} and
// converge_dependency_down_seconds{controller,dependency}: for each of the
// controller's dependencies (reconcile.Options.Dependencies,
// Health().Dependencies), 1 while it is up and 0 while it is down (the
// controller then hands no key to its reconciler), and the seconds since
// it went down (0 while up); read at scrape time, like the health series
// above, so that a change is seen at the next scrape without any hook
// in reconcile.Metrics. Controllers sharing one *dependency.Dependency
// show the same value and the same start of an outage, one series per
// controller. A reconcile that failed for a dependency down
// (reconcile.DependencyDown) counts as result="error".
// For a controller with a checkpoint (reconcile.Options.Checkpoint,
// Health().Checkpoint), read at scrape time likewise and absent for one
// without: converge_checkpoint_active{controller}, 1 while the controller
// runs from its checkpoint (its store not listed in time at its start, and
// not caught up with since) and 0 otherwise;
// converge_checkpoint_revision{controller} and
// converge_checkpoint_age_seconds{controller}, the store revision of the
// checkpoint in use while active, else of the latest written, and the
// seconds since the controller last heard from its store in it (both
// absent until a checkpoint is loaded or written);
// converge_checkpoint_writes_total{controller},
// converge_checkpoint_write_failures_total{controller} and
// converge_checkpoint_damaged_total{controller}, the checkpoints written,
// the writes that failed, and the damaged checkpoints found and ignored.
//
// Sharding (reconcile/shard): a Metrics is also a shard.Metrics, for
// shard.Options.Metrics of any number of replicas:
//
//	rep, err := shard.New(raw, shard.Options{ID: hostname, Metrics: m})
//
// converge_shard_buckets_owned{replica}: the buckets the replica owns now
// (releasing ones included until handed over; 0 once it has stopped).
// converge_shard_handover_duration_seconds{replica,kind}: for each bucket
// the replica took, the time from its first seeing the plan name it the
// owner to its owning the bucket, by kind: "initial" (the bucket had no
// owner yet), "planned" (the previous owner handed it over) or "takeover"
// (the previous owner had died or left); buckets from 1 ms to 60 s.
// converge_shard_ownerless_buckets{controller}: the buckets no replica
// works on, as the controller's replica sees them (Health().Ownerless),
// read at scrape time for a controller given to Watch whose Sharder
// reports them; it stays above 0 for at most the handover bound (a crash
// takeover: the TTL and the assigner's writes), so an alert on it lasting
// longer finds buckets nobody reconciles. Writes a shard owner made after
// losing its bucket count in converge_fenced_writes_rejected_total.
package convergeprom
