package shard_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/converge-go/converge/reconcile/shard"
	"github.com/converge-go/converge/store"
)

// A single replica becomes the assigner, joins, and is given every
// bucket; Claim then proves its ownership of any key with the bucket's
// owner record at its epoch and its membership.
func Example() {
	raw := store.NewMemory[[]byte]()
	rep, err := shard.New(raw, shard.Options{ID: "replica-1", Buckets: 8, TTL: time.Second})
	if err != nil {
		panic(err)
	}
	// Subscribe's callback runs each time the replica takes buckets.
	all := make(chan struct{})
	var once sync.Once
	cancel := rep.Subscribe(func(owns func(string) bool, revision int64) {
		if rep.Status().Owned == 8 {
			once.Do(func() { close(all) })
		}
	})
	defer cancel()

	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- rep.Run(ctx) }()
	<-all

	claim, ok := rep.Claim("items/a")
	fmt.Println("owned:", ok, "bucket:", shard.Bucket("items/a", 8), "guards:", len(claim.Guards))
	st := rep.Status()
	fmt.Println("owned buckets:", st.Owned, "ownerless:", len(st.Ownerless), "members:", st.Members)
	stop()
	fmt.Println("run:", <-done)
	// Output:
	// owned: true bucket: 6 guards: 2
	// owned buckets: 8 ownerless: 0 members: [replica-1]
	// run: <nil>
}
