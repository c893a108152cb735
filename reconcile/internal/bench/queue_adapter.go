package bench

import "time"

// Queue is the surface every scenario drives. Each implementation under
// comparison satisfies it through one small adapter, so all of them run
// exactly the same scenario code.
type Queue interface {
	// Add makes key ready now (deduplicated while it waits).
	Add(key string)
	// AddAfter makes key ready after delay.
	AddAfter(key string, delay time.Duration)
	// AddRateLimited makes key ready after the queue's per-key backoff.
	AddRateLimited(key string)
	// Forget resets key's backoff.
	Forget(key string)
	// Get blocks until a key is ready; ok is false once the queue is shut down.
	Get() (key string, ok bool)
	// Done marks key as finished processing.
	Done(key string)
	// Len reports how many keys are ready and waiting to be handed out.
	Len() int
	// ShutDown stops the queue and wakes every blocked Get.
	ShutDown()
}

// Backoff is the per-key exponential backoff every implementation is given,
// so that AddRateLimited delays are the same for all of them.
type Backoff struct {
	Base, Max time.Duration
}

// Impl names one queue implementation and builds empty queues of it.
type Impl struct {
	Name string
	New  func(Backoff) Queue
}

// Impls returns the implementations under comparison, converge first.
func Impls() []Impl {
	return []Impl{
		{Name: "converge", New: newConverge},
		{Name: "client-go", New: newClientGo},
		{Name: "controller-runtime", New: newControllerRuntime},
	}
}
