package queue_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/converge-go/converge/queue"
)

// The worker loop: Get a key, handle it, Forget its backoff on success or
// requeue it rate-limited on failure, and always call Done.
func Example_workerLoop() {
	q := queue.New(queue.Options[string]{
		RateLimiter: queue.NewExponential[string](time.Millisecond, time.Second, 0),
	})
	attempts := map[string]int{}
	reconcile := func(key string) error {
		attempts[key]++
		if key == "flaky" && attempts[key] < 3 {
			return errors.New("not yet")
		}
		return nil
	}
	q.Add("stable")
	q.Add("flaky")
	q.Add("stable") // deduplicated: still one reconcile

	for handled := 0; handled < 2; {
		key, err := q.Get(context.Background())
		if err != nil {
			break
		}
		if err := reconcile(key); err != nil {
			q.AddWith(key, queue.AddOptions{RateLimited: true}) // retry with backoff
		} else {
			q.Forget(key)
			handled++
			fmt.Printf("%s converged after %d attempt(s)\n", key, attempts[key])
		}
		q.Done(key)
	}
	q.ShutDown()
	// Output:
	// stable converged after 1 attempt(s)
	// flaky converged after 3 attempt(s)
}

// Backoff: an exponential per-key delay combined with an overall token
// bucket; the larger delay wins.
func Example_backoff() {
	limiter := queue.NewMax[string](
		queue.NewExponential[string](10*time.Millisecond, time.Second, 0),
		queue.NewBucket[string](100, 10, time.Second),
	)
	for range 4 {
		fmt.Println(limiter.When("db-0"))
	}
	fmt.Println("retries:", limiter.NumRequeues("db-0"))
	limiter.Forget("db-0")
	fmt.Println("after Forget:", limiter.When("db-0"))
	// Output:
	// 10ms
	// 20ms
	// 40ms
	// 80ms
	// retries: 4
	// after Forget: 10ms
}

// Priorities: higher first, FIFO within a priority. A controller's initial
// list goes in at PriorityLow so that live changes overtake it.
func Example_priorities() {
	q := queue.New(queue.Options[string]{})
	for _, k := range []string{"list-1", "list-2", "list-3"} {
		q.AddWith(k, queue.AddOptions{Priority: queue.PriorityLow})
	}
	q.Add("live-change")
	q.AddWith("urgent", queue.AddOptions{Priority: queue.PriorityHigh})
	for q.View().Len() > 0 {
		k, _ := q.Get(context.Background())
		fmt.Println(k)
		q.Done(k)
	}
	// Output:
	// urgent
	// live-change
	// list-1
	// list-2
	// list-3
}

// Drain: stop taking adds, let the workers finish what is ready and in
// flight, and learn which keys were left behind.
func Example_drain() {
	q := queue.New(queue.Options[string]{})
	q.Add("a")
	q.Add("b")
	q.AddWith("retry-later", queue.AddOptions{After: time.Hour})

	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			key, err := q.Get(context.Background())
			if errors.Is(err, queue.ErrShutDown) {
				return
			}
			q.Done(key)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	left, err := q.Drain(ctx)
	wg.Wait()
	fmt.Println("left behind:", left, "error:", err)
	// Output:
	// left behind: [retry-later] error: <nil>
}

// A consumer of a batch API takes the ready keys in batches; each key is
// still marked Done on its own.
func ExampleQueue_GetBatch() {
	q := queue.New(queue.Options[string]{})
	for _, k := range []string{"route-1", "route-2", "route-3"} {
		q.Add(k)
	}
	batch, err := q.GetBatch(context.Background(), 2, nil)
	if err != nil {
		panic(err)
	}
	for _, h := range batch {
		fmt.Println("programmed", h.Key)
		q.Done(h.Key)
	}
	fmt.Println("still ready:", q.View().Len())
	// Output:
	// programmed route-1
	// programmed route-2
	// still ready: 1
}

// AddBatch queues the keys of a batch of events under one acquisition of
// the queue's lock; duplicates coalesce as with Add, and each add keeps
// its own options.
func ExampleQueue_AddBatch() {
	q := queue.New(queue.Options[string]{})
	q.AddBatch([]queue.BatchAdd[string]{
		{Key: "pods/a"},
		{Key: "pods/b", Options: queue.AddOptions{Priority: queue.PriorityHigh}},
		{Key: "pods/a"},
		{Key: "pods/c", Options: queue.AddOptions{After: time.Hour}},
	})
	fmt.Println("ready:", q.View().Len())
	for q.View().Len() > 0 {
		key, _ := q.Get(context.Background())
		fmt.Println(key)
		q.Done(key)
	}
	q.ShutDown()
	// Output:
	// ready: 2
	// pods/b
	// pods/a
}

// A View reads the queue without changing it: for a debug page, a health
// check or a metrics exporter.
func ExampleQueue_View() {
	q := queue.New(queue.Options[string]{})
	q.Add("a")
	q.Add("b")
	q.AddWith("c", queue.AddOptions{After: time.Hour})
	key, _ := q.Get(context.Background())

	v := q.View()
	fmt.Println("ready:", v.Len(), "queued c:", v.Queued("c"), "queued", key+":", v.Queued(key))
	for _, it := range v.Snapshot() {
		fmt.Println(it.Key, it.State)
	}
	// Output:
	// ready: 1 queued c: true queued a: false
	// b waiting
	// c delayed
	// a processing
}
