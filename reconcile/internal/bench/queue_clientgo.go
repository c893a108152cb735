package bench

import "k8s.io/client-go/util/workqueue"

// clientGoQueue adapts client-go's typed rate-limiting workqueue. It is
// unnamed, so it registers no metrics.
type clientGoQueue struct {
	workqueue.TypedRateLimitingInterface[string]
}

// newClientGo returns a client-go workqueue whose backoff is b.
func newClientGo(b Backoff) Queue {
	return clientGoQueue{workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](b.Base, b.Max),
		workqueue.TypedRateLimitingQueueConfig[string]{},
	)}
}

func (c clientGoQueue) Get() (string, bool) {
	key, shutdown := c.TypedRateLimitingInterface.Get()
	return key, !shutdown
}
