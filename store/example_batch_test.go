package store_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/converge-go/converge/store"
)

// A batch checks each write on its own: the stale update is refused with
// ErrConflict on its own result, and the other writes land together.
func ExampleWriteBatch() {
	ctx := context.Background()
	s := store.NewMemory[*Config]()
	defer s.Close()
	web, _ := s.Create(ctx, "apps/web", &Config{Replicas: 1, Image: "web:1"})
	db, _ := s.Create(ctx, "apps/db", &Config{Replicas: 1, Image: "db:1"})

	res, err := store.WriteBatch(ctx, s, []store.Write[*Config]{
		{Key: "apps/web", Value: &Config{Replicas: 3, Image: "web:1"}, Revision: web.Revision},
		{Key: "apps/db", Value: &Config{Replicas: 2, Image: "db:1"}, Revision: db.Revision + 1}, // stale
		{Key: "apps/cache", Value: &Config{Replicas: 1, Image: "cache:1"}},                      // a create
	})
	if err != nil {
		fmt.Println("refused whole:", err)
		return
	}
	for _, r := range res {
		if errors.Is(r.Err, store.ErrConflict) {
			fmt.Println("conflict")
			continue
		}
		fmt.Println(r.Object.Key, r.Object.Revision)
	}
	// Output:
	// apps/web 3
	// conflict
	// apps/cache 4
}
