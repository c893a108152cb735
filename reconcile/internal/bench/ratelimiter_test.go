package bench

import (
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"

	"github.com/converge-go/converge/queue"
)

// TestClientGoRateLimiterIsAQueueRateLimiter: queue.RateLimiter keeps
// client-go's method set (When, Forget, NumRequeues), so a client-go rate
// limiter configures a converge queue as it is, and its NumRequeues is the
// queue's View().Retries.
func TestClientGoRateLimiterIsAQueueRateLimiter(t *testing.T) {
	var l queue.RateLimiter[string] = workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Millisecond, time.Second)
	q := queue.New(queue.Options[string]{RateLimiter: l})
	defer q.ShutDown()
	q.AddWith("a", queue.AddOptions{RateLimited: true})
	q.AddWith("a", queue.AddOptions{RateLimited: true})
	if got := q.View().Retries("a"); got != 2 {
		t.Fatalf("Retries = %d after two rate-limited adds, want 2", got)
	}
	q.Forget("a")
	if got := q.View().Retries("a"); got != 0 {
		t.Fatalf("Retries = %d after Forget, want 0", got)
	}
}
