package bench

import (
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
)

// controllerRuntimeQueue adapts controller-runtime's priority queue. It is
// unnamed, so it records no metrics.
type controllerRuntimeQueue struct {
	priorityqueue.PriorityQueue[string]
}

// newControllerRuntime returns a controller-runtime priority queue whose
// backoff is b.
func newControllerRuntime(b Backoff) Queue {
	return controllerRuntimeQueue{priorityqueue.New("", func(o *priorityqueue.Opts[string]) {
		o.RateLimiter = workqueue.NewTypedItemExponentialFailureRateLimiter[string](b.Base, b.Max)
	})}
}

func (c controllerRuntimeQueue) Get() (string, bool) {
	key, shutdown := c.PriorityQueue.Get()
	return key, !shutdown
}
