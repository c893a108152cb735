package bench

import (
	"context"
	"time"

	"github.com/converge-go/converge/queue"
)

// convergeQueue adapts converge's queue.Queue.
type convergeQueue struct {
	q *queue.Queue[string]
}

// newConverge returns a converge queue whose backoff is b, without jitter.
func newConverge(b Backoff) Queue {
	return convergeQueue{q: queue.New(queue.Options[string]{
		RateLimiter: queue.NewExponential[string](b.Base, b.Max, 0),
	})}
}

func (c convergeQueue) Add(key string) { c.q.Add(key) }
func (c convergeQueue) AddAfter(key string, d time.Duration) {
	c.q.AddWith(key, queue.AddOptions{After: d})
}
func (c convergeQueue) AddRateLimited(key string) {
	c.q.AddWith(key, queue.AddOptions{RateLimited: true})
}
func (c convergeQueue) Forget(key string) { c.q.Forget(key) }
func (c convergeQueue) Done(key string)   { c.q.Done(key) }
func (c convergeQueue) Len() int          { return c.q.View().Len() }
func (c convergeQueue) ShutDown()         { c.q.ShutDown() }

func (c convergeQueue) Get() (string, bool) {
	key, err := c.q.Get(context.Background())
	return key, err == nil
}
