package reconciletest_test

import (
	"context"
	"fmt"
	"time"

	"github.com/converge-go/converge/reconcile/reconciletest"
)

// A World counts what runs per key; a reconciler scales it, and a
// disturbance reaches the controller through the world's Source.
func ExampleWorld() {
	w := reconciletest.NewWorld(8)
	w.Scale("web", 3)
	w.Disturb("web") // a crash: nothing runs for web any more

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	woken := make(chan string, 8)
	go w.Source().Start(ctx, func(key string) { woken <- key })
	fmt.Println(w.Count("web"), <-woken)
	// Output: 0 web
}
